import { describe, expect, it } from '@jest/globals';
import { applyJsonDiff, parseJsonPath } from './json-diff.js';
import { MysqlJsonError } from './mysql-json.js';

// Partial JSON update operations on values (the recorded partial update of
// a MySQL 8 binary log is in mysql-json.test.ts); the bytes here are written
// from sql/json_diff.cc's format: operation, path, value in binary JSON.

function diff(...ops: [op: number, path: string, value?: number[]][]): Buffer {
  return Buffer.concat(
    ops.map(([op, path, value]) =>
      Buffer.concat([
        Buffer.from([op, Buffer.byteLength(path)]),
        Buffer.from(path),
        value ? Buffer.from([value.length, ...value]) : Buffer.alloc(0),
      ]),
    ),
  );
}
const int16 = (n: number) => [5, n & 0xff, (n >> 8) & 0xff];
const TRUE = [4, 1];

describe('partial JSON updates', () => {
  it('parses the paths the server writes, quoted members included', () => {
    expect(parseJsonPath('$')).toEqual([]);
    expect(parseJsonPath('$.a[2]."b c"."q\\"d".e')).toEqual(['a', 2, 'b c', 'q"d', 'e']);
    expect(() => parseJsonPath('a.b')).toThrow(MysqlJsonError);
    expect(() => parseJsonPath('$[x]')).toThrow(/array index/);
  });

  it('replaces, inserts and removes members and array cells, leaving the value before untouched', () => {
    const before = { a: [1, 2, 3], b: { c: 'x' }, 'k k': 1 };
    const after = applyJsonDiff(
      before,
      diff(
        [0, '$.a[1]', int16(20)],
        [1, '$.a[0]', int16(5)],
        [1, '$.a[9]', TRUE],
        [2, '$.b.c'],
        [1, '$.b.d', int16(-1)],
        [0, '$."k k"', int16(2)],
      ),
    );
    expect(after).toEqual({ a: [5, 1, 20, 3, true], b: { d: -1 }, 'k k': 2 });
    expect(before).toEqual({ a: [1, 2, 3], b: { c: 'x' }, 'k k': 1 });
    expect(applyJsonDiff({ a: 1 }, diff([0, '$', [4, 0]]))).toBeNull();
  });

  it('refuses operations the value before does not fit', () => {
    expect(() => applyJsonDiff({ a: 1 }, diff([0, '$.b', TRUE]))).toThrow(/\$\.b .*no such member/);
    expect(() => applyJsonDiff([1], diff([2, '$[3]']))).toThrow(/no such array cell/);
    expect(() => applyJsonDiff({ a: 1 }, diff([1, '$.a.b', TRUE]))).toThrow(
      /not lead into an object or array/,
    );
    expect(() => applyJsonDiff({}, Buffer.from([7, 1, 0x24]))).toThrow(/operation 7/);
    expect(() => applyJsonDiff({}, Buffer.from([0, 5, 0x24]))).toThrow(/ends early/);
  });
});
