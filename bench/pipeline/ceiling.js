// The ceilings of bench/pipeline, each in its own process as a worker is:
//   kafka     a bare consume + produce loop with the worker's Kafka client
//             (@platformatic/kafka): message values forwarded as they are, in
//             batches of 500 with one in flight, idempotent, acks=all.
//   postgres  a standalone batched loader: consume, JSON.parse, the same
//             compiled mapping, then one `INSERT … SELECT … FROM unnest(…) ON
//             CONFLICT (key) DO UPDATE` per batch of 500 messages, into a table
//             it created with the types of the first batch.
// Usage (run.js starts it): node ceiling.js <kafka|postgres> <json options>
// Prints one JSON line: {seconds, peakRssMiB}; the clock starts once the
// consumer stream is open, as a worker's does once it is ready.
/* global performance -- Node 24 global */
import pg from 'pg';
import { Producer, ProduceAcks } from '@platformatic/kafka';
import { openEarliestStream } from './kafka.js';

const BATCH = 500;

/** Consumes `n` messages of `topic` from the beginning, calling `onBatch` with each batch of up to 500. */
const consumeBatches = async ({ brokers, topic, n }, onBatch) => {
  const { stream, close } = await openEarliestStream({ brokers, topic, clientId: 'bench-ceiling' });
  const start = performance.now();
  let batch = [];
  let seen = 0;
  for await (const message of stream) {
    batch.push(message);
    seen++;
    if (batch.length === BATCH || seen === n) {
      await onBatch(batch);
      batch = [];
      if (seen === n) break;
    }
  }
  const seconds = (performance.now() - start) / 1000;
  await close();
  return seconds;
};

const kafkaLoop = async (o) => {
  const producer = new Producer({
    clientId: 'bench-ceiling',
    bootstrapBrokers: o.brokers,
    idempotent: true,
    acks: ProduceAcks.ALL,
    autocreateTopics: true,
  });
  await producer.metadata({ topics: [] });
  const seconds = await consumeBatches(o, (batch) =>
    producer.send({ messages: batch.map((m) => ({ topic: o.out, key: m.key, value: m.value })) }),
  );
  await producer.close();
  return seconds;
};

const quote = (name) => `"${name.replace(/"/g, '""')}"`;

/** A column type for a value, as a hand-written loader would pick it. */
const typeOf = (v) =>
  v !== null && typeof v === 'object'
    ? 'jsonb'
    : typeof v === 'boolean'
      ? 'boolean'
      : typeof v === 'number'
        ? Number.isInteger(v)
          ? 'bigint'
          : 'double precision'
        : 'text';

const asText = (v) =>
  v === null || v === undefined ? null : typeof v === 'object' ? JSON.stringify(v) : String(v);

const postgresLoader = async (o) => {
  const { compileMapper } = await import('@sluice/shared/mapper');
  const mapper = o.rules.length ? compileMapper(o.rules) : null;
  const keyOf = (columns) => {
    const keys = o.rules.filter((r) => r.primary_key).map((r) => r.key);
    return keys.length ? keys : columns;
  };
  const client = new pg.Client({ connectionString: o.databaseUrl });
  await client.connect();
  let sql = null;
  let columns = null;
  const seconds = await consumeBatches(o, async (batch) => {
    const rows = [];
    for (const m of batch) {
      const value = JSON.parse(m.value.toString('utf8'));
      if (mapper) rows.push(...mapper.apply(value));
      else rows.push(value);
    }
    if (sql === null) {
      columns = Object.keys(rows[0]);
      const types = columns.map((c) =>
        typeOf(rows.find((r) => r[c] !== null && r[c] !== undefined)?.[c] ?? null),
      );
      const key = keyOf(columns);
      await client.query(
        `create table ${quote(o.table)} (${columns.map((c, i) => `${quote(c)} ${types[i]}`).join(', ')}, primary key (${key.map(quote).join(', ')}))`,
      );
      const nonKey = columns.filter((c) => !key.includes(c));
      sql = `insert into ${quote(o.table)} (${columns.map(quote).join(', ')})
        select ${columns.map((_, i) => `u.c${i}::${types[i]}`).join(', ')}
          from unnest(${columns.map((_, i) => `$${i + 1}::text[]`).join(', ')}) as u(${columns.map((_, i) => `c${i}`).join(', ')})
        on conflict (${key.map(quote).join(', ')}) ${nonKey.length ? `do update set ${nonKey.map((c) => `${quote(c)} = excluded.${quote(c)}`).join(', ')}` : 'do nothing'}`;
    }
    await client.query(
      sql,
      columns.map((c) => rows.map((r) => asText(r[c]))),
    );
  });
  await client.end();
  return seconds;
};

const [mode, json] = process.argv.slice(2);
const options = JSON.parse(json);
const seconds = await (mode === 'kafka' ? kafkaLoop(options) : postgresLoader(options)).catch((e) => {
  // One line for the bench's table: the server's or client's message, not a stack.
  process.stderr.write(`${e.message}\n`);
  process.exit(1);
});
process.stdout.write(`${JSON.stringify({ seconds, peakRssMiB: process.resourceUsage().maxRSS / 1024 })}\n`);
process.exit(0);
