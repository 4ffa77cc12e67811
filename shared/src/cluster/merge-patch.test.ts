import { describe, expect, it } from '@jest/globals';
import { mergePatch } from './merge-patch.js';

describe('mergePatch (RFC 7386)', () => {
  // Appendix A of RFC 7386, every row.
  const cases: [unknown, unknown, unknown][] = [
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [
      ['a', 'b'],
      ['c', 'd'],
      ['c', 'd'],
    ],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ];
  it.each(cases)('%j patched with %j is %j', (target, patch, expected) => {
    expect(mergePatch(target, patch)).toEqual(expected);
  });

  it('modifies neither argument and shares nothing with them', () => {
    const target = { a: { b: [1] }, keep: { x: 1 } };
    const patch = { a: { c: { d: 1 } } };
    const result = mergePatch(target, patch) as { a: { b: number[]; c: { d: number } }; keep: { x: number } };
    result.a.b.push(2);
    result.a.c.d = 2;
    result.keep.x = 2;
    expect(target).toEqual({ a: { b: [1] }, keep: { x: 1 } });
    expect(patch).toEqual({ a: { c: { d: 1 } } });
  });

  it('treats an undefined member as absent (JSON has none)', () => {
    expect(mergePatch({ a: 1 }, { a: undefined, b: 2 })).toEqual({ a: 1, b: 2 });
  });
});
