import { afterAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Admin } from '@platformatic/kafka';
import type { WorkerConfig } from '@sluice/shared/catalog';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { createScratchDatabase, type ScratchDatabase } from '@sluice/testing/postgres';
import {
  createTopic,
  eventually,
  exitedEarly,
  readTopic,
  startWorker,
  stopWorker,
  topicSize,
  waitReady,
  type RunningWorker,
  type TextMessage,
} from '@sluice/testing/kafka-helpers';
import {
  mariadbSource,
  mariadbSourceConfig,
  untilRecorded,
  writeMariadbTransaction,
} from './mariadb-numbered.js';
import { numberedRow, numberedSource, numberedSourceConfig, writeTransaction } from './numbered-rows.js';
import { platformTargetConfig } from './platform-target-config.js';

// A TRUNCATE on the source in the middle of a stream of numbered rows, from
// PostgreSQL and from MariaDB, through the built worker programs (source,
// then a POSTGRES_TARGET) on the real servers and broker: the data model's
// topic has several partitions, so each truncate is published once to each
// of them, after the events that came before it and before those after it;
// the target, started once everything is on the topic, reads all partitions'
// backlogs at once — one partition's rows from after the truncate arrive
// before another's from before it — and must still end with exactly the
// rows written after the last truncate, each with its last version.

const PARTITIONS = 4;
const MAPPER = [
  { key: 'id', path: 'id', cast: 'int', primary_key: true },
  { key: 'version', path: 'version', cast: 'int' },
  { key: 'label', path: 'label' },
  { key: 'amount', path: 'amount' },
];

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const rows = (ids: number[], version: number) => ids.map((id) => numberedRow(id, version));

interface Event {
  op: string;
  key: Record<string, unknown>;
  before: unknown;
  after: { id: number } | null;
  truncate?: unknown;
  source: { entry: string; position: string };
}

/**
 * The truncate copies on the topic, checked: one per partition, keyed `{}`,
 * no row; and in each partition every insert of `before` ids precedes the
 * copy, every change of an `after` id follows it.
 */
function checkCopies(messages: TextMessage[], entry: string, before: Set<number>, after: Set<number>) {
  const copies = messages.filter((m) => (JSON.parse(m.value) as Event).op === 't');
  expect(copies.map((m) => m.partition).sort()).toEqual(range(0, PARTITIONS - 1));
  for (const copy of copies) {
    const event = JSON.parse(copy.value) as Event;
    expect(copy.key).toBe('{}');
    expect(event).toMatchObject({ key: {}, before: null, after: null, source: { entry } });
    for (const m of messages.filter((x) => x.partition === copy.partition && x !== copy)) {
      const id = (JSON.parse(m.value) as { key: { id: number } }).key.id;
      if (before.has(id)) expect(m.offset).toBeLessThan(copy.offset);
      if (after.has(id)) expect(m.offset).toBeGreaterThan(copy.offset);
    }
  }
  return copies.map((m) => JSON.parse(m.value) as Event);
}

/** Runs the target over the whole topic and checks its table holds exactly `expected` (id → version), row by row. */
async function checkTarget(
  run: string,
  dm: string,
  topic: string,
  expected: Map<number, number>,
  env: Record<string, string>,
  workers: RunningWorker[],
  scratch: ScratchDatabase[],
): Promise<void> {
  const target = await createScratchDatabase('trunc_tgt');
  scratch.push(target);
  const config = platformTargetConfig(run, {
    connectorType: 'POSTGRES_TARGET',
    configuration: { ...target.settings, schema: 'public' },
    datamodelId: dm,
    topic,
    table: 'numbered_copy',
    mapper: MAPPER,
  });
  const w = await startWorker(config, { ...env, SLUICE_BATCH_SIZE: '200' });
  workers.push(w);
  await waitReady(w);
  const read = async () =>
    (
      await target.client
        .query<{ id: number; version: number; label: string; amount: string }>(
          'select id::int as id, version::int as version, label, amount::text as amount from public.numbered_copy order by id',
        )
        .catch(() => ({ rows: [] }))
    ).rows;
  const ids = [...expected.keys()].sort((a, b) => a - b);
  // The last of the rows is written last (the highest id of the last transaction's inserts).
  await eventually(
    read,
    (r) =>
      r.length === expected.size && r.every((x, i) => x.id === ids[i] && x.version === expected.get(x.id)),
    120_000,
    250,
  ).catch((e: Error) => {
    throw new Error(`${exitedEarly(w, 'the target worker') ?? ''} ${e.message.slice(0, 300)}`);
  });
  const found = await read();
  expect(found.map((r) => r.id)).toEqual(ids);
  for (const r of found) {
    const want = numberedRow(r.id, expected.get(r.id) as number);
    expect(r).toEqual({ id: r.id, version: want.version, label: want.label, amount: want.amount });
  }
}

async function topicHas(admin: Admin, topic: string, n: number, failure: () => string | undefined) {
  await eventually(
    async () => {
      const why = failure();
      if (why) throw new Error(why);
      return topicSize(admin, topic);
    },
    (size) => size >= n,
    90_000,
    250,
  );
}

describeWithKafka('TRUNCATE mid-stream, source → Kafka → PostgreSQL target (worker programs)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const env = { SLUICE_STREAM_BROKERS: brokers.join(','), SLUICE_BATCH_LINGER_MS: '20' };
  const workers: RunningWorker[] = [];
  const scratch: ScratchDatabase[] = [];
  const closes: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const w of workers) await stopWorker(w);
    for (const close of closes) await close().catch(() => undefined);
    for (const db of scratch) await db.drop().catch(() => undefined);
  });

  it('PostgreSQL: a TRUNCATE inside a transaction leaves exactly the rows written after it', async () => {
    const run = randomUUID().slice(0, 8);
    const topic = `sluice.trunc-pg-${run}`;
    const source = await numberedSource('trunc_pg', brokers, topic, PARTITIONS);
    closes.push(() => source.close());
    const config = numberedSourceConfig(`src_trunc_pg_${run}`, source.db, topic, run);
    const src = await startWorker(config, env);
    workers.push(src);
    await waitReady(src);

    const c = source.db.client;
    await writeTransaction(c, { inserts: rows(range(1, 1500), 1) });
    // Changes before the truncate in its own transaction, and after it.
    await c.query('begin');
    await c.query('update public.numbered set version = 2 where id <= 100');
    await c.query('truncate public.numbered restart identity');
    await c.query(
      `insert into public.numbered select * from jsonb_to_recordset($1::jsonb)
         as x(id int, version int, label text, amount numeric, doc jsonb)`,
      [JSON.stringify(rows(range(2001, 2100), 1))],
    );
    await c.query('commit');
    await writeTransaction(c, {
      inserts: rows(range(2101, 3500), 1),
      updates: rows(range(2001, 2050), 2),
      deletes: range(2051, 2060),
    });
    await topicHas(source.admin, topic, 1500 + 100 + PARTITIONS + 100 + 1400 + 50 + 10, () =>
      exitedEarly(src, 'the source worker'),
    );

    const messages = await readTopic(brokers, source.admin, topic);
    const [event] = checkCopies(
      messages,
      'public.numbered',
      new Set(range(1, 1500)),
      new Set(range(2001, 3500)),
    );
    expect(event?.truncate).toEqual({ cascade: false, restart_identity: true });

    const expected = new Map(range(2001, 3500).map((id) => [id, id <= 2050 ? 2 : 1]));
    for (const id of range(2051, 2060)) expected.delete(id);
    await checkTarget(run, `dm-${run}`, topic, expected, env, workers, scratch);
  });

  it('PostgreSQL: a TRUNCATE … CASCADE of another table is an event of the captured table it reached', async () => {
    const run = randomUUID().slice(0, 8);
    const topic = `sluice.trunc-cascade-${run}`;
    const db = await createScratchDatabase('trunc_cascade');
    scratch.push(db);
    await db.client.query('create table public.parent (id int primary key)');
    await db.client.query(
      'create table public.child (id int primary key, parent int not null references public.parent (id))',
    );
    await createTopic(brokers, topic, 2);
    const admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
    closes.push(async () => {
      await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
      await admin.close();
    });
    const config = {
      connector_id: `src_trunc_cascade_${run}`,
      connector_type: 'POSTGRES_SOURCE',
      role: 'source',
      // Only the child is captured: the parent's truncate reaches it by CASCADE.
      configuration: { ...db.settings, whitelist: ['public.child'] },
      datamodels: [{ id: `dm-${run}`, name: 'child', entry: 'public.child', enabled: true, topic }],
    } as unknown as WorkerConfig;
    const src = await startWorker(config, env);
    workers.push(src);
    await waitReady(src);
    await db.client.query('insert into public.parent values (1)');
    await db.client.query('insert into public.child values (10, 1)');
    await db.client.query('truncate public.parent cascade');
    await topicHas(admin, topic, 1 + 2, () => exitedEarly(src, 'the source worker'));
    const events = (await readTopic(brokers, admin, topic)).map((m) => JSON.parse(m.value) as Event);
    expect(events.map((e) => e.op).sort()).toEqual(['c', 't', 't']);
    expect(events.find((e) => e.op === 't')).toMatchObject({
      key: {},
      truncate: { cascade: true, restart_identity: false },
      source: { entry: 'public.child' },
    });
  });

  it('MariaDB: TRUNCATE statements, unqualified and qualified, leave exactly the rows written after the last', async () => {
    const run = randomUUID().slice(0, 8);
    const topic = `sluice.trunc-maria-${run}`;
    const connectorId = `src_trunc_maria_${run}`;
    const source = await mariadbSource('trunc_maria', brokers, topic, PARTITIONS);
    closes.push(async () => {
      await source.admin.deleteTopics({ topics: [`sluice-position.${connectorId}`] }).catch(() => undefined);
      await source.close();
    });
    const config = mariadbSourceConfig(connectorId, source.database, topic);
    const src = await startWorker(config, env);
    workers.push(src);
    await waitReady(src);
    const failure = () => exitedEarly(src, 'the source worker');
    await untilRecorded(brokers, source.admin, connectorId, '0-0-0', failure);

    const conn = source.conn;
    await writeMariadbTransaction(conn, { inserts: rows(range(1, 1500), 1) });
    // Unqualified (the session's default database), behind a comment.
    await conn.query('/* nightly clean-up */ TRUNCATE numbered');
    await writeMariadbTransaction(conn, { inserts: rows(range(2001, 2600), 1) });
    await conn.query(`TRUNCATE TABLE \`${source.database}\`.\`numbered\``);
    await writeMariadbTransaction(conn, {
      inserts: rows(range(3001, 4400), 1),
    });
    await writeMariadbTransaction(conn, {
      updates: rows(range(3001, 3050), 2),
      deletes: range(3051, 3060),
    });
    await topicHas(source.admin, topic, 1500 + PARTITIONS + 600 + PARTITIONS + 1400 + 50 + 10, failure);

    const messages = await readTopic(brokers, source.admin, topic);
    const entry = `${source.database}.numbered`;
    const byTruncate = new Map<string, TextMessage[]>();
    for (const m of messages) {
      const e = JSON.parse(m.value) as Event;
      if (e.op === 't') byTruncate.set(e.source.position, [...(byTruncate.get(e.source.position) ?? []), m]);
    }
    const sequence = (copies: TextMessage[]) =>
      Number(copies[0]!.value && (JSON.parse(copies[0]!.value) as Event).source.position.split('-')[2]);
    const [first, second] = [...byTruncate.values()].sort((a, b) => sequence(a) - sequence(b));
    expect(byTruncate.size).toBe(2);
    const others = messages.filter((m) => (JSON.parse(m.value) as Event).op !== 't');
    checkCopies([...others, ...first!], entry, new Set(range(1, 1500)), new Set(range(2001, 4400)));
    checkCopies([...others, ...second!], entry, new Set(range(1, 2600)), new Set(range(3001, 4400)));

    const expected = new Map(range(3001, 4400).map((id) => [id, id <= 3050 ? 2 : 1]));
    for (const id of range(3051, 3060)) expected.delete(id);
    await checkTarget(run, `dm-${connectorId}`, topic, expected, env, workers, scratch);
  });
});
