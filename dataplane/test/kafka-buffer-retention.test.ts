import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { createHash, randomUUID } from 'node:crypto';
import {
  Admin,
  Consumer,
  MessagesStreamFallbackModes,
  MessagesStreamModes,
  Producer,
  type Message,
} from '@platformatic/kafka';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { clientOptions } from '../src/systems/kafka/connection.js';
import { byLeader, fetchFromLeaders } from '../src/systems/kafka/fetch.js';
import { workerOutboundPolicy } from '../src/outbound.js';

// The workers keep the Kafka client's message buffers past the callback that
// handed them out: the target loop buffers consumed messages until a batch is
// written (target-loop.ts), a replay or a preview collects fetched records
// (kafka/fetch.ts). That is only right while the client never reuses the
// memory behind a key or a value (a PostgreSQL parser that did lost CDC
// events under load). The client slices record keys and values out of the
// socket's chunks, which Node allocates afresh for each read, and the WASM
// decompressors (LZ4, Snappy) copy out of their memory. This holds it to
// that: thousands of numbered messages of every compression, each checked
// against its expected bytes only after all of them arrived.

const N = 10_000;
const CODECS = ['none', 'gzip', 'snappy', 'lz4', 'zstd'] as const;

/** The value of message `i`: its number and a deterministic body of 64 to 1,280 bytes. */
const valueOf = (i: number) =>
  `${i}:${createHash('sha256')
    .update(`body-${i}`)
    .digest('hex')
    .repeat(1 + (i % 20))}`;

describeWithKafka('Kafka message buffers kept past their callback (real broker)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const run = randomUUID().slice(0, 8);
  const options = (id: string) => clientOptions({ brokers }, id, workerOutboundPolicy());
  let admin: Admin;

  beforeAll(async () => {
    admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
    const producer = new Producer<Buffer, Buffer, Buffer, Buffer>({
      ...options('sluice-test-producer'),
      idempotent: true,
      acks: -1,
    });
    try {
      for (const codec of CODECS) {
        const topic = `retention-${codec}-${run}`;
        await admin.createTopics({ topics: [topic], partitions: 3, replicas: 1 });
        for (let from = 0; from < N; from += 500) {
          const messages = Array.from({ length: Math.min(500, N - from) }, (_, j) => ({
            topic,
            key: Buffer.from(`k-${from + j}`),
            value: Buffer.from(valueOf(from + j)),
          }));
          await producer.send({ messages, compression: codec });
        }
      }
    } finally {
      await producer.close();
    }
  }, 180_000);
  afterAll(async () => {
    await admin?.close();
  });

  /** The numbers whose key or value is not what was produced, and those missing or seen twice. */
  function check(received: { key: Buffer | null | undefined; value: Buffer | null | undefined }[]) {
    const seen = new Set<number>();
    const wrong: number[] = [];
    const twice: number[] = [];
    for (const m of received) {
      const i = Number(m.key?.toString().slice(2));
      if (seen.has(i)) twice.push(i);
      seen.add(i);
      if (m.value?.toString() !== valueOf(i)) wrong.push(i);
    }
    const missing = Array.from({ length: N }, (_, i) => i).filter((i) => !seen.has(i));
    return { wrong: wrong.slice(0, 10), twice: twice.slice(0, 10), missing: missing.slice(0, 10) };
  }

  it.each(CODECS)(
    'consumed messages (%s) keep their bytes until the last one arrived',
    async (codec) => {
      const topic = `retention-${codec}-${run}`;
      const consumer = new Consumer<Buffer, Buffer, Buffer, Buffer>({
        ...options('sluice-test-retention'),
        groupId: `sluice-test-retention-${codec}-${run}`,
      });
      const kept: Message<Buffer, Buffer, Buffer, Buffer>[] = [];
      try {
        const stream = await consumer.consume({
          topics: [topic],
          mode: MessagesStreamModes.EARLIEST,
          fallbackMode: MessagesStreamFallbackModes.EARLIEST,
          autocommit: false,
          maxWaitTime: 200,
          // Small responses: many socket reads, many fetches, all kept.
          maxBytes: 64 * 1024,
          maxBytesPerPartition: 32 * 1024,
        });
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`${kept.length} of ${N} arrived`)), 90_000);
          stream.on('data', (m: Message<Buffer, Buffer, Buffer, Buffer>) => {
            kept.push(m);
            if (kept.length >= N) {
              clearTimeout(timer);
              resolve();
            }
          });
          stream.once('error', reject);
        });
        await stream.close();
      } finally {
        await consumer.close(true).catch(() => undefined);
      }
      expect(check(kept)).toEqual({ wrong: [], twice: [], missing: [] });
    },
    120_000,
  );

  it('fetched record batches (replays, previews) keep their bytes across later fetches', async () => {
    const topic = `retention-lz4-${run}`;
    const client = new Consumer<Buffer, Buffer, Buffer, Buffer>({
      ...options('sluice-test-retention-fetch'),
      groupId: `sluice-test-retention-fetch-${run}`,
    });
    const kept: { key: Buffer | null; value: Buffer | null }[] = [];
    try {
      const meta = await client.metadata({ topics: [topic] });
      const info = meta.topics.get(topic)!;
      const next = info.partitions.map(() => 0n);
      const ends = (await client.listOffsets({ topics: [topic] })).get(topic) ?? [];
      while (next.some((o, p) => o < (ends[p] ?? 0n))) {
        const wanted = next.flatMap((fetchOffset, partition) =>
          fetchOffset < (ends[partition] ?? 0n) ? [{ partition, fetchOffset }] : [],
        );
        for (const p of await fetchFromLeaders(
          client,
          info.id,
          byLeader(info.partitions, wanted),
          32 * 1024,
        )) {
          for (const batch of p.batches) {
            for (const r of batch.records) {
              const offset = batch.firstOffset + BigInt(r.offsetDelta);
              if (offset < (next[p.partition] ?? 0n)) continue;
              kept.push({ key: r.key ?? null, value: r.value ?? null });
              next[p.partition] = offset + 1n;
            }
          }
        }
      }
    } finally {
      await client.close(true).catch(() => undefined);
    }
    expect(check(kept)).toEqual({ wrong: [], twice: [], missing: [] });
  }, 120_000);
});
