import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { WorkerConfig } from '@sluice/shared/catalog';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import {
  assertWorkerBuilt,
  eventually,
  startWorker,
  stopWorker,
  waitReady,
  type RunningWorker,
} from '@sluice/testing/kafka-helpers';
import { platformTargetConfig } from './platform-target-config.js';

// PostgreSQL → PostgreSQL as users run it: two processes of the built worker
// program — a POSTGRES_SOURCE capturing a table by logical replication and
// publishing change events to the platform stream broker, and a
// POSTGRES_TARGET consuming them through the mapper into another database —
// on the real PostgreSQL server and the real Kafka broker. Existing rows
// arrive by the snapshot, then inserts, updates and deletes by the stream.

const MAPPER = [
  { key: 'id', path: 'id', cast: 'int', primary_key: true },
  { key: 'item', path: 'item' },
  { key: 'qty', path: 'qty', cast: 'int' },
];

describeWithKafka('PostgreSQL → Kafka → PostgreSQL (worker program)', () => {
  const run = randomUUID().slice(0, 8);
  const brokers = testKafkaBrokers() ?? [];
  let source: ScratchDatabase;
  let target: ScratchDatabase;
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    assertWorkerBuilt();
    if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
    source = await createScratchDatabase('cdc_src');
    target = await createScratchDatabase('cdc_tgt');
    await source.client.query('create table public.orders (id int primary key, item text not null, qty int)');
    await source.client.query(`insert into public.orders values (1, 'apple', 3), (2, 'pear', 5)`);
  });
  afterAll(async () => {
    for (const w of workers) await stopWorker(w);
    await source?.drop();
    await target?.drop();
  });

  const rows = async () =>
    (
      await target.client
        .query('select id::int as id, item, qty::int as qty from public.orders_copy order by id')
        .catch(() => ({ rows: [] }))
    ).rows;

  it('snapshots, then streams inserts, updates and deletes into the target table', async () => {
    const dm = `dm-${run}`;
    const topic = `sluice.${dm}`;
    const sourceConfig: WorkerConfig = {
      connector_id: `src_${run}`,
      connector_type: 'POSTGRES_SOURCE',
      role: 'source',
      configuration: { ...source.settings, whitelist: ['public.orders'] },
      datamodels: [{ id: dm, name: 'orders', entry: 'public.orders', enabled: true, topic }],
    };
    const targetConfig = platformTargetConfig(run, {
      connectorType: 'POSTGRES_TARGET',
      configuration: { ...target.settings, schema: 'public' },
      datamodelId: dm,
      topic,
      table: 'orders_copy',
      mapper: MAPPER,
    });
    const env = { SLUICE_STREAM_BROKERS: brokers.join(','), SLUICE_BATCH_LINGER_MS: '20' };
    const src = await startWorker(sourceConfig, env);
    workers.push(src);
    await waitReady(src);
    const tgt = await startWorker(targetConfig, env);
    workers.push(tgt);
    await waitReady(tgt);

    // The snapshot: rows that existed before the capture started.
    await eventually(rows, (r) => r.length === 2);
    expect(await rows()).toEqual([
      { id: 1, item: 'apple', qty: 3 },
      { id: 2, item: 'pear', qty: 5 },
    ]);

    // The stream: one transaction of an insert, an update and a delete.
    await source.client.query('begin');
    await source.client.query(`insert into public.orders values (3, 'plum', 7)`);
    await source.client.query(`update public.orders set qty = 4 where id = 1`);
    await source.client.query('delete from public.orders where id = 2');
    await source.client.query('commit');
    const after = await eventually(rows, (r) => r.length === 2 && r.some((x: { id: number }) => x.id === 3));
    expect(after).toEqual([
      { id: 1, item: 'apple', qty: 4 },
      { id: 3, item: 'plum', qty: 7 },
    ]);
    // The target table was created from the mapper's casts, keyed by its primary_key rule.
    const key = await target.client.query(
      `select a.attname from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
       where i.indrelid = 'public.orders_copy'::regclass and i.indisprimary`,
    );
    expect(key.rows.map((r: { attname: string }) => r.attname)).toEqual(['id']);
    const types = await target.client.query(
      `select column_name, data_type from information_schema.columns where table_name = 'orders_copy' order by ordinal_position`,
    );
    // `int` casts make bigint columns (a JSON number may not fit in 32 bits).
    expect(types.rows).toEqual([
      { column_name: 'id', data_type: 'bigint' },
      { column_name: 'item', data_type: 'text' },
      { column_name: 'qty', data_type: 'bigint' },
    ]);
    expect(src.output() + tgt.output()).not.toContain('apple');
  });
});
