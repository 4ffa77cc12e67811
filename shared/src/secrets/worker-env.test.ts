import { describe, expect, it } from '@jest/globals';
import {
  MissingSecretError,
  secretEnvName,
  secretFromEnv,
  secretRefsIn,
  withSecretValues,
} from './worker-env.js';

const ref = (name: string, key: string) => ({ valueFrom: { secretKeyRef: { name, key } } });

describe('secret references as worker environment variables', () => {
  it('finds every distinct reference, however deeply nested, once', () => {
    const config = {
      password: ref('sluice-conn-1', 'password'),
      nested: { list: [ref('user-secret', 'token'), { again: ref('sluice-conn-1', 'password') }] },
      plain: 'not a secret',
    };
    expect(secretRefsIn(config)).toEqual([
      { name: 'sluice-conn-1', key: 'password' },
      { name: 'user-secret', key: 'token' },
    ]);
  });

  it('gives each (secret, key) its own valid variable name that the worker reads back', () => {
    const a = secretEnvName({ name: 'db', key: 'password' });
    expect(a).toMatch(/^SLUICE_SECRET_[0-9A-F]{16}$/);
    // The separator keeps ("ab","c") and ("a","bc") apart.
    expect(secretEnvName({ name: 'ab', key: 'c' })).not.toBe(secretEnvName({ name: 'a', key: 'bc' }));
    expect(secretFromEnv({ name: 'db', key: 'password' }, { [a]: 'hunter2' })).toBe('hunter2');
    expect(secretFromEnv({ name: 'db', key: 'other' }, { [a]: 'hunter2' })).toBeUndefined();
  });

  it('substitutes every reference in a copy, and names the first one without a value', () => {
    const config = { a: ref('db', 'password'), list: [{ b: ref('api', 'token') }], n: 3 };
    const values: Record<string, string> = { 'db/password': 'hunter2', 'api/token': 't0k' };
    const valueOf = (r: { name: string; key: string }) => values[`${r.name}/${r.key}`];
    const missing = (r: { name: string; key: string }) => `no ${r.name}/${r.key}`;
    expect(withSecretValues(config, valueOf, missing)).toEqual({ a: 'hunter2', list: [{ b: 't0k' }], n: 3 });
    expect(config.a).toEqual(ref('db', 'password'));
    const without = { ...config, c: ref('gone', 'key') };
    expect(() => withSecretValues(without, valueOf, missing)).toThrow(new MissingSecretError('no gone/key'));
  });
});
