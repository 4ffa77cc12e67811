import { describe, expect, it } from '@jest/globals';
import { isLowerCaseUuid, isUuid } from './common.js';

describe('UUIDs', () => {
  const id = '0b6f1c2e-1111-4aaa-8bbb-000000000001';

  it('takes a UUID in either case as the API does, and only lower case as the catalog holds it', () => {
    expect(isUuid(id)).toBe(true);
    expect(isUuid(id.toUpperCase())).toBe(true);
    expect(isLowerCaseUuid(id)).toBe(true);
    expect(isLowerCaseUuid(id.toUpperCase())).toBe(false);
  });

  it('refuses what is not exactly one UUID', () => {
    for (const v of [
      undefined,
      null,
      42,
      '',
      `${id}\n`,
      ` ${id}`,
      id.replace(/-/g, ''),
      `{${id}}`,
      `${id}0`,
    ]) {
      expect(isUuid(v)).toBe(false);
      expect(isLowerCaseUuid(v)).toBe(false);
    }
  });
});
