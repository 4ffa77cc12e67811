import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import mysql from 'mysql2/promise';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { eventually } from '@sluice/testing/kafka-helpers';
import { reachState } from './catalog-fixtures.js';
import { ordersCopy } from './orders-copy.js';
import { workerGatewayFixture } from './worker-gateway.js';

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
  const api = workerGatewayFixture('cdc-api-mariadb', brokers);
  const database = `cdc_api_${randomUUID().slice(0, 8)}`;
  let source: mysql.Connection;
  let target: ScratchDatabase;
  const url = new URL(process.env.SLUICE_TEST_MYSQL_URL ?? 'mysql://unset');

  beforeAll(async () => {
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
  });
  afterAll(async () => {
    await source?.query(`drop database if exists \`${database}\``).catch(() => undefined);
    await source?.end();
    await target?.drop();
  });

  const rows = () => ordersCopy(target);
  const stateIs = (id: string, state: string) =>
    reachState(api.gw, api.t.owner, `/api/pipelines/${id}`, state);

  it('snapshot, then insert/update/delete; pause keeps the changes for the resume', async () => {
    const created = await api.gw.http
      .post('/api/pipelines/')
      .set(api.t.owner.auth)
      .send({
        name: 'orders-mariadb-cdc',
        team_id: api.t.teamId,
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

    await api.gw.http.post(`/api/pipelines/${id}/start`).set(api.t.owner.auth);
    await stateIs(id, 'live');
    expect(await eventually(rows, (r) => r.length === 2)).toEqual([
      { id: 1, item: 'apple', qty: 3 },
      { id: 2, item: 'pear', qty: 5 },
    ]);

    // The data model's schema: the table's columns, from the source's catalog.
    const schema = await api.gw.http
      .get(`/api/datamodels/${created.body.datamodel_id as string}/schema`)
      .set(api.t.owner.auth);
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
    expect((await api.gw.http.post(`/api/pipelines/${id}/pause`).set(api.t.owner.auth)).body).toBe('PAUSED');
    await stateIs(id, 'paused');
    await source.query(`insert into orders values (4, 'kiwi', 2)`);
    await source.query(`update orders set item = 'plum!' where id = 3`);
    expect((await rows()).map((r) => r.id)).toEqual([1, 3]);
    await api.gw.http.post(`/api/pipelines/${id}/start`).set(api.t.owner.auth);
    await stateIs(id, 'live');
    expect(await eventually(rows, (r) => r.length === 3 && r[1]!.item === 'plum!')).toEqual([
      { id: 1, item: 'apple', qty: 4 },
      { id: 3, item: 'plum!', qty: 7 },
      { id: 4, item: 'kiwi', qty: 2 },
    ]);
    await api.gw.http.post(`/api/pipelines/${id}/pause`).set(api.t.owner.auth);
    await stateIs(id, 'paused');
    expect((await api.gw.http.delete(`/api/pipelines/${id}`).set(api.t.owner.auth)).status).toBe(204);
  }, 240_000);
});
