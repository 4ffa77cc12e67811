import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import mysql from 'mysql2/promise';
import { Admin } from '@platformatic/kafka';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { purgeBinaryLogs } from '@sluice/testing/mariadb';
import { startBastion, type Bastion } from '@sluice/testing/sshd';
import { assertWorkerBuilt, eventually, WORKER_PROGRAM } from '@sluice/testing/kafka-helpers';
import { closeScanned, reachState, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { expectBastionRefusal } from './bastion-outage.js';
import { startTestGateway, type TestGateway } from './harness.js';
import { autoBackfills } from '../src/features/backfills/backfills.auto.js';

// Previews, snapshot backfills and the purged-position recovery of a
// MariaDB source, as a user drives them through the REST API: the real
// MariaDB server, the real broker, the real PostgreSQL target, the real
// source and target workers run by the embedded operator. The table's key
// is composite with a binary part, so the backfill's keyset pages bound
// text and bytes alike; pages of 200 rows over 1,234 rows.

const N = 1234;
const PAGE = 200;

/** The source's row i, as inserted. */
const sourceRow = (i: number) => ({
  region: i % 2 === 0 ? 'eu' : 'us',
  code: Buffer.from([i % 3 === 0 ? 0xff : 0x00, i % 5]),
  id: i,
  item: `item-${i}`,
  price: `${i}.${String(i % 100).padStart(2, '0')}`,
  placed: new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString().replace('T', ' ').replace('Z', ''),
});

/** Row i as the target holds it (every column as text). */
const targetRow = (i: number, item = `item-${i}`) => {
  const r = sourceRow(i);
  return {
    region: r.region,
    code: r.code.toString('base64'),
    id: i,
    item,
    price: r.price,
    placed: `${r.placed.replace(' ', 'T')}Z`,
  };
};

/** The ids of the first `n` rows in the table's key order: region, then the code's bytes, then id. */
const firstInKeyOrder = (n: number) =>
  Array.from({ length: N }, (_, i) => sourceRow(i + 1))
    .sort((a, b) => a.region.localeCompare(b.region) || Buffer.compare(a.code, b.code) || a.id - b.id)
    .slice(0, n)
    .map((r) => r.id);

const MAPPER = [
  { key: 'region', path: 'region', primary_key: true },
  { key: 'code', path: 'code', primary_key: true },
  { key: 'id', path: 'id', cast: 'int', primary_key: true },
  { key: 'item', path: 'item' },
  { key: 'price', path: 'price' },
  { key: 'placed', path: 'placed' },
];

describeWithKafka('MariaDB sources: preview, snapshot backfills, a purged position (real workers)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const run = randomUUID().slice(0, 8);
  const database = `bf_maria_${run}`;
  const url = new URL(process.env.SLUICE_TEST_MYSQL_URL ?? 'mysql://unset');
  const saved = { ...process.env };
  let source: mysql.Connection;
  let target: ScratchDatabase;
  let gw: TestGateway;
  let t: TeamSetup;
  let bastion: Bastion;
  let pipelineId = '';
  let pipeline: Record<string, unknown> = {};
  const login = () => ({
    host: url.hostname,
    port: Number(url.port),
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
  });
  const sourceConfig = () => ({ ...login(), ssl_mode: 'disabled', whitelist: [`${database}.orders`] });

  beforeAll(async () => {
    assertWorkerBuilt();
    if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
    if (!process.env.SLUICE_TEST_MYSQL_URL)
      throw new Error('needs SLUICE_TEST_MYSQL_URL (scripts/with-mariadb.sh)');
    source = await mysql.createConnection(login());
    await source.query(`create database \`${database}\``);
    await source.query(`use \`${database}\``);
    await source.query(`create table orders (
      region char(2) not null, code binary(2) not null, id int not null,
      item varchar(40) not null, price decimal(10,2) not null, placed timestamp(3) not null,
      primary key (region, code, id))`);
    await source.query("set time_zone = '+00:00'");
    for (let from = 1; from <= N; from += 500) {
      const rows = [];
      for (let i = from; i < Math.min(from + 500, N + 1); i++) rows.push(Object.values(sourceRow(i)));
      await source.query('insert into orders values ?', [rows]);
    }
    target = await createScratchDatabase('bf_maria_tgt');
    process.env.SLUICE_STREAM_BROKERS = brokers.join(',');
    process.env.SLUICE_BATCH_LINGER_MS = '20';
    process.env.SLUICE_BACKFILL_BATCH_SIZE = String(PAGE);
    bastion = await startBastion();
    gw = await startTestGateway('pglite', {
      SLUICE_EMBEDDED_OPERATOR: 'true',
      SLUICE_WORKER_COMMAND: JSON.stringify([process.execPath, WORKER_PROGRAM]),
      SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128',
    });
    t = await setupTeam(gw, `bf-maria-${run}`);
  }, 120_000);
  afterAll(async () => {
    if (gw) await closeScanned(gw);
    process.env = saved;
    await bastion?.close();
    await source?.query(`drop database if exists \`${database}\``).catch(() => undefined);
    await source?.end();
    await target?.drop();
  });

  const rows = async () =>
    (
      await target.client
        .query(
          `select region, code, id::int as id, item, price::text as price, placed::text as placed
             from public.orders_copy order by id`,
        )
        .catch(() => ({ rows: [] }))
    ).rows as ReturnType<typeof targetRow>[];
  const post = (path: string, body: unknown) =>
    gw.http
      .post(path)
      .set(t.owner.auth)
      .send(body as object);
  const get = (path: string) => gw.http.get(path).set(t.owner.auth);
  const backfill = () => ({
    source_connector_ids: [pipeline.source_connector_id],
    datamodel_ids: [],
    target_connector_ids: [],
  });
  const ended = () =>
    eventually(
      async () =>
        (await get(`/api/backfills/status?source_connector_id=${String(pipeline.source_connector_id)}`)).body,
      (b) => ['succeeded', 'failed', 'cancelled'].includes(b.state),
      120_000,
      250,
    );
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

  it('a preview before the first start samples the MariaDB table in key order: real rows, mapped', async () => {
    const created = await post('/api/pipelines/', {
      name: `bf-maria-${run}`,
      team_id: t.teamId,
      source_name: `bf-maria-src-${run}`,
      source_type: 'MARIADB_SOURCE',
      source_config: sourceConfig(),
      target_name: `bf-maria-dst-${run}`,
      target_type: 'POSTGRES_TARGET',
      target_config: { ...target.settings, schema: 'public' },
      subscription_target_table_name: 'orders_copy',
      subscription_backfill: true,
      subscription_mapper_config: MAPPER,
    });
    expect(created.status).toBe(201);
    pipelineId = created.body.id as string;
    pipeline = (await get(`/api/pipelines/${pipelineId}`)).body as Record<string, unknown>;

    const res = await post(`/api/pipelines/${pipelineId}/preview`, { limit: 4 });
    expect(res.status).toBe(200);
    expect(res.body.source).toEqual({
      kind: 'table',
      topic: expect.any(String),
      table: `${database}.orders`,
      fetched: 4,
    });
    expect(res.body.warnings).toContain(
      `Rows sampled from the source table ${database}.orders, as snapshot change events`,
    );
    // The worker's mapping of the first rows in key order (ids 10, 20, 40, 50: eu, 0x0000).
    const mapped = res.body.rows.map((r: { row: unknown }) => r.row);
    expect(mapped).toEqual(
      firstInKeyOrder(4).map((id) => {
        const r = sourceRow(id);
        return { ...r, code: r.code.toString('base64'), placed: `${r.placed.replace(' ', 'T')}Z` };
      }),
    );
    expect(res.body.rows[0]).toMatchObject({ op: 'upsert', key_columns: ['region', 'code', 'id'] });
    expect(res.body.errors).toEqual([]);
  }, 60_000);

  it('a snapshot backfill through the REST API re-delivers every row of the table', async () => {
    await post(`/api/pipelines/${pipelineId}/start`, {});
    await reachState(gw, t.owner, `/api/pipelines/${pipelineId}`, 'live', 120_000);
    // The worker's own snapshot first: the backfill must deliver the same rows, values and all.
    const bySnapshot = await eventually(rows, (r) => r.length === N, 120_000, 500);
    expect(bySnapshot).toEqual(range(1, N).map((i) => targetRow(i)));
    await target.client.query('truncate public.orders_copy');

    const preview = await post('/api/backfills/preview', backfill());
    expect(preview.status).toBe(200);
    expect(preview.body.items).toEqual([
      expect.objectContaining({
        mode: 'snapshot',
        target_table_name: 'orders_copy',
        datamodel_id: pipeline.datamodel_id,
      }),
    ]);
    // InnoDB's statistics: an estimate, not a count.
    expect(preview.body.estimated_messages).toBeGreaterThan(N / 2);
    expect(preview.body.estimated_messages).toBeLessThan(N * 2);
    const started = await post('/api/backfills/', backfill());
    expect(started.status).toBe(202);
    expect(await ended()).toMatchObject({ state: 'succeeded', messages_replayed: N, error: null });
    expect(await rows()).toEqual(bySnapshot);
    expect((await get(`/api/pipelines/${pipelineId}`)).body.state).toBe('live');
  }, 300_000);

  it('a position the server purged stops the worker, and a re-snapshot backfill brings it back', async () => {
    await post(`/api/pipelines/${pipelineId}/pause`, {});
    await reachState(gw, t.owner, `/api/pipelines/${pipelineId}`, 'paused');
    // Changes the paused worker never read, then the binary logs holding them purged.
    await source.query('begin');
    for (let i = N + 1; i <= N + 10; i++)
      await source.query('insert into orders values (?)', [Object.values(sourceRow(i))]);
    await source.query("update orders set item = 'changed' where id = 7");
    await source.query('commit');
    await purgeBinaryLogs(source);

    await post(`/api/pipelines/${pipelineId}/start`, {});
    const sourcePath = `/api/connectors/${String(pipeline.source_connector_id)}`;
    const failed = await eventually(
      async () => (await get(sourcePath)).body as { worker?: { last_termination?: { message?: string } } },
      (b) => /purged/.test(b.worker?.last_termination?.message ?? ''),
      90_000,
      500,
    );
    expect(failed.worker!.last_termination!.message).toMatch(
      /no longer has the binary log this connector resumes from .*take a new snapshot, by a snapshot backfill of all its data models into all their targets \(POST \/backfills\/; the worker then resumes where the backfill began\)/,
    );
    expect(await rows()).toHaveLength(N);

    const started = await post('/api/backfills/', backfill());
    expect(started.status).toBe(202);
    expect(await ended()).toMatchObject({ state: 'succeeded', messages_replayed: N + 10, error: null });
    const expected = range(1, N + 10).map((i) => targetRow(i, i === 7 ? 'changed' : `item-${i}`));
    expect(await rows()).toEqual(expected);

    // Started again, the worker streams from the position the re-snapshot took.
    await post(`/api/pipelines/${pipelineId}/pause`, {});
    await reachState(gw, t.owner, `/api/pipelines/${pipelineId}`, 'paused');
    await post(`/api/pipelines/${pipelineId}/start`, {});
    await reachState(gw, t.owner, `/api/pipelines/${pipelineId}`, 'live', 120_000);
    await source.query('insert into orders values (?)', [Object.values(sourceRow(N + 11))]);
    await source.query("update orders set item = 'again' where id = 8");
    const after = await eventually(
      rows,
      (r) => r.length === N + 11 && r.find((x) => x.id === 8)?.item === 'again',
      90_000,
      500,
    );
    expect(after).toEqual(
      range(1, N + 11).map((i) => targetRow(i, i === 7 ? 'changed' : i === 8 ? 'again' : `item-${i}`)),
    );
    const worker = (await get(sourcePath)).body as { status: string };
    expect(worker.status).toBe('live');
  }, 400_000);

  it('a new subscription with backfill whose stream lost its beginning is re-snapshotted automatically', async () => {
    // Retention removed the beginning of the data model's stream, the worker's snapshot with it.
    const topic = `sluice.${String(pipeline.datamodel_id)}`;
    const admin = new Admin({ clientId: `bf-maria-${run}`, bootstrapBrokers: brokers });
    try {
      const partitions = (await admin.metadata({ topics: [topic] })).topics.get(topic)!.partitionsCount;
      await admin.deleteRecords({
        // -1: up to each partition's end.
        topics: [
          { name: topic, partitions: range(0, partitions - 1).map((p) => ({ partition: p, offset: -1n })) },
        ],
      });
    } finally {
      await admin.close();
    }
    const created = await post('/api/subscriptions/', {
      datamodel_id: pipeline.datamodel_id,
      target_connector_id: pipeline.target_connector_id,
      target_table_name: 'orders_auto',
      backfill: true,
      mapper_config: MAPPER,
    });
    expect(created.status).toBe(201);
    const subscriptionId = created.body.id as string;
    // Decided once the target worker runs the new subscription (live again after its new
    // configuration). The pipeline's own subscription (backfill on) lost its snapshot too: one run
    // at a time per source, so the second waits for the first to end.
    const seen: Awaited<ReturnType<typeof autoBackfills>> = [];
    const ours = await eventually(
      async () => {
        seen.push(...(await autoBackfills(gw.ctx, 3_600_000)));
        return seen.find((o) => o.subscriptionId === subscriptionId && o.runId);
      },
      (o) => o !== undefined,
      120_000,
      1000,
    );
    const truncated = {
      action: 'snapshot',
      reason: "retention removed the beginning of the change stream, and the source's snapshot with it",
    };
    expect(ours!.decision).toEqual(truncated);
    const first = seen.find((o) => o.subscriptionId === pipeline.subscription_id && o.runId);
    expect(first?.decision).toEqual(truncated);
    expect(await ended()).toMatchObject({ id: ours!.runId, state: 'succeeded', messages_replayed: N + 11 });
    const auto = async () =>
      (
        await target.client
          .query(`select id::int as id, item from public.orders_auto order by id`)
          .catch(() => ({ rows: [] }))
      ).rows as { id: number; item: string }[];
    expect((await auto()).map((r) => r.id)).toEqual(range(1, N + 11));
    expect((await auto()).find((r) => r.id === 8)).toEqual({ id: 8, item: 'again' });
  }, 300_000);

  it('a table without a primary key: the preview and the run say so in one sentence', async () => {
    await source.query('create table nokey (id int, item varchar(10))');
    await source.query("insert into nokey values (1, 'a'), (2, 'b')");
    const created = await post('/api/pipelines/', {
      name: `bf-maria-nokey-${run}`,
      team_id: t.teamId,
      source_name: `bf-maria-nokey-src-${run}`,
      source_type: 'MARIADB_SOURCE',
      source_config: { ...sourceConfig(), whitelist: [`${database}.nokey`] },
      target_name: `bf-maria-nokey-dst-${run}`,
      target_type: 'POSTGRES_TARGET',
      target_config: { ...target.settings, schema: 'public' },
      subscription_target_table_name: 'nokey_copy',
      subscription_mapper_config: [{ key: 'id', path: 'id', cast: 'int', primary_key: true }],
    });
    expect(created.status).toBe(201);
    const sentence = `Table ${database}.nokey has no primary key: a re-snapshot reads tables in key order`;
    const preview = await post(`/api/pipelines/${created.body.id as string}/preview`, {});
    expect([preview.status, preview.body]).toEqual([502, { detail: sentence }]);
    const sourceId = created.body.source_connector_id as string;
    const started = await post('/api/backfills/', {
      source_connector_ids: [sourceId],
      datamodel_ids: [],
      target_connector_ids: [],
    });
    expect(started.status).toBe(202);
    const done = await eventually(
      async () => (await get(`/api/backfills/status?source_connector_id=${sourceId}`)).body,
      (b) => ['succeeded', 'failed', 'cancelled'].includes(b.state),
      60_000,
      250,
    );
    expect(done).toMatchObject({ state: 'failed', messages_replayed: 0 });
    expect(done.error).toBe(`bf-maria-nokey-src-${run}_${database}.nokey → nokey_copy: ${sentence}`);
  }, 60_000);

  it('a source behind an SSH bastion is previewed through it; the bastion down is a 502 saying so', async () => {
    const created = await post('/api/pipelines/', {
      name: `bf-maria-ssh-${run}`,
      team_id: t.teamId,
      source_name: `bf-maria-ssh-src-${run}`,
      source_type: 'MARIADB_SOURCE',
      source_config: { ...sourceConfig(), ...bastion.tunnelFields() },
      target_name: `bf-maria-ssh-dst-${run}`,
      target_type: 'POSTGRES_TARGET',
      target_config: { ...target.settings, schema: 'public' },
      subscription_target_table_name: 'orders_tunnelled',
      subscription_mapper_config: MAPPER,
    });
    expect(created.status).toBe(201);
    const preview = () => post(`/api/pipelines/${created.body.id as string}/preview`, { limit: 2 });
    const res = await preview();
    expect(res.status).toBe(200);
    expect(res.body.source).toMatchObject({ kind: 'table', table: `${database}.orders`, fetched: 2 });
    expect(res.body.rows.map((r: { row: { id: number } }) => r.row.id)).toEqual(firstInKeyOrder(2));

    // The data model's schema is discovered through the tunnel too, from the source's catalog.
    const schema = await get(`/api/datamodels/${created.body.datamodel_id as string}/schema`);
    expect(schema.body).toMatchObject({
      source: 'catalog',
      fields: [
        { name: 'region', type: 'char(2)', nullable: false },
        { name: 'code', type: 'binary(2)', nullable: false },
        { name: 'id', type: 'int(11)', nullable: false },
        { name: 'item', type: 'varchar(40)', nullable: false },
        { name: 'price', type: 'decimal(10,2)', nullable: false },
        { name: 'placed', type: 'timestamp(3)', nullable: false },
      ],
    });

    await expectBastionRefusal(bastion, preview);
  }, 60_000);
});
