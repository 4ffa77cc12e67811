import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

// The encoding patch of the Kafka client (scripts/patch-kafka-client.mjs):
// installed, and writing record batches the client's own reader reads back
// exactly — plain records, a null key, a tombstone, an empty key, multi-byte
// lengths and offset deltas, and the records it leaves to the client's own
// encoder (headers, a timestamp more than 2^30 ms from the batch's first; the
// client's own varint64 is wrong from 2^31 ms on, patched or not, which our
// workers never reach: their records carry the time of the send).

const CLIENT = resolve(import.meta.dirname, '../../../../node_modules/@platformatic/kafka/dist');

interface Out {
  key: Buffer | null;
  value: Buffer | null;
  headers: Map<Buffer, Buffer>;
  topic: string;
  partition: number;
  timestamp: bigint;
}

describe('the patched Kafka client', () => {
  it('is installed (npm install ran the patch)', () => {
    for (const file of ['protocol/records.js', 'clients/producer/producer.js', 'network/connection.js'])
      expect(readFileSync(join(CLIENT, file), 'utf8')).toContain('Patched (Sluice, patches/)');
  });

  it('writes record batches its own reader reads back byte for byte', async () => {
    const records = (await import(join(CLIENT, 'protocol/records.js'))) as {
      createRecordsBatch(m: Out[]): { buffer: Buffer };
      readRecordsBatch(r: unknown): {
        records: {
          key: Buffer | null;
          value: Buffer | null;
          offsetDelta: number;
          timestampDelta: bigint;
          headers: [Buffer, Buffer][];
        }[];
      };
    };
    const { Reader } = (await import(join(CLIENT, 'protocol/reader.js'))) as {
      Reader: { from(b: Buffer): unknown };
    };
    const t0 = 1_700_000_000_000n;
    const plain = (i: number): Out => ({
      key: Buffer.from(JSON.stringify({ id: i, name: 'ünïcödé' })),
      value: Buffer.from(JSON.stringify({ id: i, pad: 'x'.repeat(i % 300) })),
      headers: new Map(),
      topic: 't',
      partition: 0,
      timestamp: t0 + BigInt(i),
    });
    const messages: Out[] = [
      ...Array.from({ length: 200 }, (_, i) => plain(i)),
      { ...plain(200), key: null },
      { ...plain(201), value: null },
      { ...plain(202), key: Buffer.alloc(0) },
      { ...plain(203), value: Buffer.from('y'.repeat(20_000)) },
      { ...plain(204), headers: new Map([[Buffer.from('h'), Buffer.from('v')]]) },
      { ...plain(205), timestamp: t0 + 1_073_741_825n },
      plain(206),
    ];
    const expected = messages.map((m) => ({ ...m }));
    const batch = records.readRecordsBatch(Reader.from(records.createRecordsBatch(messages).buffer));
    expect(batch.records).toHaveLength(expected.length);
    batch.records.forEach((r, i) => {
      const m = expected[i]!;
      expect({ i, key: r.key, value: r.value }).toEqual({ i, key: m.key, value: m.value });
      expect(r.offsetDelta).toBe(i);
      expect(r.timestampDelta).toBe(m.timestamp - t0);
      expect(r.headers.map(([k, v]) => [k.toString(), v.toString()])).toEqual(
        [...m.headers].map(([k, v]) => [k.toString(), v.toString()]),
      );
    });
  });
});
