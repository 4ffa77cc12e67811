import { describe, expect, it } from '@jest/globals';
import { parsePgoutput } from './pgoutput.js';

// pgoutput's Truncate message ('T'): the relations it names and its option
// bits, as PostgreSQL writes them (logicalrep_write_truncate: the relation
// count, one options byte — 1 CASCADE, 2 RESTART IDENTITY — and the oids).

function truncateMessage(options: number, relids: number[]): Buffer {
  const b = Buffer.alloc(1 + 4 + 1 + 4 * relids.length);
  b.write('T', 0, 'latin1');
  b.writeUInt32BE(relids.length, 1);
  b.writeUInt8(options, 5);
  relids.forEach((r, i) => b.writeUInt32BE(r, 6 + 4 * i));
  return b;
}

describe('parsePgoutput: Truncate', () => {
  it('names every relation and reads CASCADE and RESTART IDENTITY', () => {
    expect(parsePgoutput(truncateMessage(0, [16384]))).toEqual({
      tag: 'truncate',
      relids: [16384],
      cascade: false,
      restartIdentity: false,
    });
    expect(parsePgoutput(truncateMessage(3, [16384, 16390, 4294967295]))).toEqual({
      tag: 'truncate',
      relids: [16384, 16390, 4294967295],
      cascade: true,
      restartIdentity: true,
    });
    expect(parsePgoutput(truncateMessage(2, [1]))).toMatchObject({ cascade: false, restartIdentity: true });
  });
});
