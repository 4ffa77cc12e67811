import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import mysql from 'mysql2/promise';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { assertWorkerBuilt, eventually, WORKER_PROGRAM } from '@sluice/testing/kafka-helpers';
import { closeScanned, reachState, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { startTestGateway, type TestGateway } from './harness.js';

// MariaDB CDC → PostgreSQL as a user drives it: one REST call creates the
// pipeline, the embedded operator runs the real MARIADB_SOURCE worker
// (binary log) and the PostgreSQL target worker as processes, the change
// stream goes through the real broker. Existing rows arrive by the
// snapshot, then an insert, an update and a delete in one transaction;
// changes made while the pipeline is paused arrive after the resume (the
// worker resumes from its recorded binary log position). The data model's
// schema is the table's, from the source's catalog.

describeWithKafka('a MariaDB CDC → PostgreSQL pipeline through the REST API (real workers)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const database = `cdc_api_${randomUUID().slice(0, 8)}`;
  let source: mysql.Connection;
  let target: ScratchDatabase;
  let gw: TestGateway;
  let t: TeamSetup;
  const saved = { ...process.env };
  const url = new URL(process.env.SLUICE_TEST_MYSQL_URL ?? 'mysql://unset');

  beforeAll(async () => {
    assertWorkerBuilt();
    if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
    if (!process.env.SLUICE_TEST_MYSQL_URL)
      throw new Error('needs SLUICE_TEST_MYSQL_URL (scripts/with-mariadb.sh)');
    source = await mysql.createConnection({
      host: url.hostname,
      port: Number(url.port),
      user: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
    });
    await source.query(`create database \`${database}\``);
    await source.query(`use \`${database}\``);
    await source.query('create table orders (id int primary key, item varchar(40) not null, qty int)');
    await source.query(`insert into orders values (1, 'apple', 3), (2, 'pear', 5)`);
    target = await createScratchDatabase('cdc_api_my_tgt');
    process.env.SLUICE_STREAM_BROKERS = brokers.join(',');
    process.env.SLUICE_BATCH_LINGER_MS = '20';
    gw = await startTestGateway('pglite', {
      SLUICE_EMBEDDED_OPERATOR: 'true',
      SLUICE_WORKER_COMMAND: JSON.stringify([process.execPath, WORKER_PROGRAM]),
      SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128',
    });
    t = await setupTeam(gw, 'cdc-api-mariadb');
  });
  afterAll(async () => {
    if (gw) await closeScanned(gw);
    process.env = saved;
    await source?.query(`drop database if exists \`${database}\``).catch(() => undefined);
    await source?.end();
    await target?.drop();
  });

  const rows = async () =>
    (
      await target.client
        .query('select id::int as id, item, qty::int as qty from public.orders_copy order by id')
        .catch(() => ({ rows: [] }))
    ).rows as { id: number; item: string; qty: number }[];
  const stateIs = (id: string, state: string) => reachState(gw, t.owner, `/api/pipelines/${id}`, state);

  it('snapshot, then insert/update/delete; pause keeps the changes for the resume', async () => {
    const created = await gw.http
      .post('/api/pipelines/')
      .set(t.owner.auth)
      .send({
        name: 'orders-mariadb-cdc',
        team_id: t.teamId,
        source_name: 'shop-mariadb',
        source_type: 'MARIADB_SOURCE',
        source_config: {
          host: url.hostname,
          port: Number(url.port),
          user: decodeURIComponent(url.username),
          password: decodeURIComponent(url.password),
          ssl_mode: 'disabled',
          whitelist: [`${database}.orders`],
        },
        target_name: 'dwh',
        target_type: 'POSTGRES_TARGET',
        target_config: { ...target.settings, schema: 'public' },
        subscription_target_table_name: 'orders_copy',
        // The target reads the stream from its beginning, the source's snapshot.
        subscription_backfill: true,
        subscription_mapper_config: [
          { key: 'id', path: 'id', cast: 'int', primary_key: true },
          { key: 'item', path: 'item' },
          { key: 'qty', path: 'qty', cast: 'int' },
        ],
      });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    expect(created.body.source_config.password).toBe('<redacted>');

    await gw.http.post(`/api/pipelines/${id}/start`).set(t.owner.auth);
    await stateIs(id, 'live');
    expect(await eventually(rows, (r) => r.length === 2)).toEqual([
      { id: 1, item: 'apple', qty: 3 },
      { id: 2, item: 'pear', qty: 5 },
    ]);

    // The data model's schema: the table's columns, from the source's catalog.
    const schema = await gw.http
      .get(`/api/datamodels/${created.body.datamodel_id as string}/schema`)
      .set(t.owner.auth);
    expect(schema.body).toMatchObject({
      source: 'catalog',
      fields: [
        { name: 'id', type: 'int(11)', nullable: false },
        { name: 'item', type: 'varchar(40)', nullable: false },
        { name: 'qty', type: 'int(11)', nullable: true },
      ],
    });

    await source.query('begin');
    await source.query(`insert into orders values (3, 'plum', 7)`);
    await source.query(`update orders set qty = 4 where id = 1`);
    await source.query('delete from orders where id = 2');
    await source.query('commit');
    expect(await eventually(rows, (r) => r.length === 2 && r.some((x) => x.id === 3))).toEqual([
      { id: 1, item: 'apple', qty: 4 },
      { id: 3, item: 'plum', qty: 7 },
    ]);

    // Paused: no worker reads the binary log; the resumed one starts at its recorded position.
    expect((await gw.http.post(`/api/pipelines/${id}/pause`).set(t.owner.auth)).body).toBe('PAUSED');
    await stateIs(id, 'paused');
    await source.query(`insert into orders values (4, 'kiwi', 2)`);
    await source.query(`update orders set item = 'plum!' where id = 3`);
    expect((await rows()).map((r) => r.id)).toEqual([1, 3]);
    await gw.http.post(`/api/pipelines/${id}/start`).set(t.owner.auth);
    await stateIs(id, 'live');
    expect(await eventually(rows, (r) => r.length === 3 && r[1]!.item === 'plum!')).toEqual([
      { id: 1, item: 'apple', qty: 4 },
      { id: 3, item: 'plum!', qty: 7 },
      { id: 4, item: 'kiwi', qty: 2 },
    ]);
    await gw.http.post(`/api/pipelines/${id}/pause`).set(t.owner.auth);
    await stateIs(id, 'paused');
    expect((await gw.http.delete(`/api/pipelines/${id}`).set(t.owner.auth)).status).toBe(204);
  }, 240_000);
});
