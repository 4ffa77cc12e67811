import { describe, expect, it } from '@jest/globals';
import { oneLine } from './one-line.js';

describe('oneLine', () => {
  it('keeps the first line of an error, its whitespace folded', () => {
    const e = new Error('  syntax error\tat   "FROM"\n    at Parser.parse (/app/x.js:1:2)\n    at …');
    expect(oneLine(e)).toBe('syntax error at "FROM"');
  });

  it('bounds a long message and says it was cut', () => {
    const cut = oneLine('x'.repeat(1000), 50);
    expect(cut).toHaveLength(50);
    expect(cut.endsWith('…')).toBe(true);
    expect(oneLine('x'.repeat(50), 50)).toBe('x'.repeat(50));
  });

  it('describes what is not an Error', () => {
    expect(oneLine(42)).toBe('42');
    expect(oneLine(undefined)).toBe('undefined');
  });
});
