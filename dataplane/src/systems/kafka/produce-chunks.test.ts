import { describe, expect, it } from '@jest/globals';
import { chunkBySize } from './produce-chunks.js';

describe('produce requests cut by size', () => {
  const msg = (n: number, keyBytes = 10) => ({ key: 'k'.repeat(keyBytes), value: 'v'.repeat(n) });

  it('keeps a small batch in one request, in order', () => {
    const batch = [msg(10), msg(20), msg(30)];
    expect(chunkBySize(batch, 1000)).toEqual([batch]);
  });

  it('cuts a large batch into consecutive requests under the limit, keys counted too', () => {
    const batch = Array.from({ length: 10 }, (_, i) => ({
      key: `${i}`.padEnd(100, '-'),
      value: 'v'.repeat(300),
    }));
    const chunks = chunkBySize(batch, 1000);
    expect(chunks.flat()).toEqual(batch);
    expect(chunks.map((c) => c.length)).toEqual([2, 2, 2, 2, 2]); // (100 + 300 + 32) × 2 ≤ 1000 < × 3
  });

  it('sends a message larger than the limit alone (the broker then says why it refuses it)', () => {
    const chunks = chunkBySize([msg(10), msg(5000), msg(10)], 1000);
    expect(chunks.map((c) => c.length)).toEqual([1, 1, 1]);
  });

  it('counts bytes, not characters, and tombstones (no value) by their key', () => {
    expect(chunkBySize([{ key: 'é'.repeat(300) }, { key: 'é'.repeat(300) }], 1000)).toHaveLength(2);
    expect(chunkBySize([{ key: 'a' }, { key: 'b' }], 1000)).toHaveLength(1);
  });
});
