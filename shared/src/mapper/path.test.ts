import { describe, expect, it } from '@jest/globals';
import { parsePath, toPipePath } from './index.js';

describe('paths', () => {
  it.each([
    ['a|b|c', ['a', 'b', 'c']],
    ['items|*|sku', ['items', '*', 'sku']],
    ['$price|x', ['$price', 'x']],
    ['$.a.b[0].c', ['a', 'b', '0', 'c']],
    ['$.items[*].sku', ['items', '*', 'sku']],
    ['$.a.*.b', ['a', '*', 'b']],
    ['$[\'key.with.dots\']["x y"]', ['key.with.dots', 'x y']],
    ['$[2]', ['2']],
    ['$', []],
    ['', []],
  ])('parses %j', (path, segments) => {
    expect(parsePath(path)).toEqual({ ok: true, segments });
  });

  it.each(['a||b', '|a', 'a|', '$.a[x]', '$.a[', '$..a', '$.'])('rejects %j', (path) => {
    expect(parsePath(path).ok).toBe(false);
  });

  it('translates the dollar form to the pipe form', () => {
    expect(toPipePath('$.orders[*].lines[0].sku')).toBe('orders|*|lines|0|sku');
    expect(() => toPipePath("$['a|b']")).toThrow("has the key 'a|b', which the pipe form cannot express");
  });
});
