import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { Admin } from '@platformatic/kafka';
import { eventually, readTopic } from '@sluice/testing/kafka-helpers';
import { reachState } from './catalog-fixtures.js';
import { ordersCopy } from './orders-copy.js';
import { workerGatewayFixture } from './worker-gateway.js';
import { autoBackfills } from '../src/features/backfills/backfills.auto.js';

// PostgreSQL CDC → PostgreSQL as a user drives it: one REST call creates the
// pipeline, the embedded operator runs the real source worker (logical
// replication) and target worker (mapper, upsert) as processes, the change
// stream goes through the real broker. Existing rows arrive by the snapshot,
// (the gateway then finds the stream beginning with that snapshot, so the
// subscription's `backfill` needs no re-snapshot), then an insert, an update
// and a delete in one transaction; a row the mapper
// marks with an `error` key lands in the error table; changes made while the
// pipeline is paused arrive after the resume (the slot kept them); deleting
// the pipeline drops the slot on the source. A second pipeline takes another
// table of the same database to a Kafka target.

const SECRET = `cdc-s3cret-${randomUUID().slice(0, 8)}`;

describeWithKafka('a PostgreSQL CDC → PostgreSQL pipeline through the REST API (real workers)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const api = workerGatewayFixture('cdc-api', brokers);
  let source: ScratchDatabase;
  let target: ScratchDatabase;

  beforeAll(async () => {
    if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
    source = await createScratchDatabase('cdc_api_src');
    target = await createScratchDatabase('cdc_api_tgt');
    await source.client.query('create table public.orders (id int primary key, item text not null, qty int)');
    await source.client.query(`insert into public.orders values (1, 'apple', 3), (2, 'pear', 5)`);
  });
  afterAll(async () => {
    await source?.drop();
    await target?.drop();
  });

  const rows = () => ordersCopy(target);
  const errorRows = async () =>
    (
      await target.client
        .query('select reason, row from public.orders_errors order by source_offset')
        .catch(() => ({ rows: [] }))
    ).rows as { reason: string; row: Record<string, unknown> }[];
  const slots = async () =>
    (
      await source.client.query<{ slot_name: string }>(
        'select slot_name from pg_replication_slots where database = current_database()',
      )
    ).rows.map((r) => r.slot_name);
  const stateIs = (id: string, state: string) =>
    reachState(api.gw, api.t.owner, `/api/pipelines/${id}`, state);

  it('snapshot, then insert/update/delete; a failing row in the error table; pause keeps changes for the resume; delete drops the slot', async () => {
    const db = (s: ScratchDatabase) => ({ ...s.settings, password: SECRET });
    const created = await api.gw.http
      .post('/api/pipelines/')
      .set(api.t.owner.auth)
      .send({
        name: 'orders-cdc',
        team_id: api.t.teamId,
        source_name: 'shop-db',
        source_type: 'POSTGRES_SOURCE',
        source_config: { ...db(source), whitelist: ['public.orders'] },
        target_name: 'dwh',
        target_type: 'POSTGRES_TARGET',
        target_config: { ...db(target), schema: 'public' },
        subscription_target_table_name: 'orders_copy',
        subscription_backfill: true,
        subscription_error_table_enabled: true,
        subscription_error_table_name: 'orders_errors',
        subscription_mapper_config: [
          { key: 'id', path: 'id', cast: 'int', primary_key: true },
          { key: 'item', path: 'item' },
          { key: 'qty', path: 'qty', cast: 'int', nullable: false },
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
    // The subscription has `backfill`, and the real source worker's stream begins with its
    // snapshot: the gateway leaves the table's past to the stream and starts no re-snapshot.
    const decided = await autoBackfills(api.gw.ctx, 3_600_000);
    expect(decided.map((d) => d.decision)).toEqual([
      { action: 'skip', reason: "the change stream begins with the source's snapshot" },
    ]);

    await source.client.query('begin');
    await source.client.query(`insert into public.orders values (3, 'plum', 7)`);
    await source.client.query(`update public.orders set qty = 4 where id = 1`);
    await source.client.query('delete from public.orders where id = 2');
    await source.client.query('commit');
    // qty is required by the mapper: this row is kept out of the table, with its reason.
    await source.client.query(`insert into public.orders values (9, 'nut', null)`);
    expect(await eventually(rows, (r) => r.length === 2 && r.some((x) => x.id === 3))).toEqual([
      { id: 1, item: 'apple', qty: 4 },
      { id: 3, item: 'plum', qty: 7 },
    ]);
    const failed = await eventually(errorRows, (r) => r.length >= 1);
    expect(failed).toHaveLength(1);
    expect(failed[0]!.row).toMatchObject({ id: 9, item: 'nut', error: expect.any(String) });

    // Paused: no worker reads the slot, which keeps the changes made meanwhile.
    expect((await api.gw.http.post(`/api/pipelines/${id}/pause`).set(api.t.owner.auth)).body).toBe('PAUSED');
    await stateIs(id, 'paused');
    await source.client.query(`insert into public.orders values (4, 'kiwi', 2)`);
    await source.client.query(`update public.orders set item = 'plum!' where id = 3`);
    expect((await rows()).map((r) => r.id)).toEqual([1, 3]);
    await api.gw.http.post(`/api/pipelines/${id}/start`).set(api.t.owner.auth);
    await stateIs(id, 'live');
    expect(await eventually(rows, (r) => r.length === 3 && r[1]!.item === 'plum!')).toEqual([
      { id: 1, item: 'apple', qty: 4 },
      { id: 3, item: 'plum!', qty: 7 },
      { id: 4, item: 'kiwi', qty: 2 },
    ]);

    // Deleting the pipeline (it owns its source) drops the capture's slot on the source.
    expect((await slots()).length).toBe(1);
    await api.gw.http.post(`/api/pipelines/${id}/pause`).set(api.t.owner.auth);
    await stateIs(id, 'paused');
    expect((await api.gw.http.delete(`/api/pipelines/${id}`).set(api.t.owner.auth)).status).toBe(204);
    expect(await eventually(slots, (s) => s.length === 0, 30_000, 250)).toEqual([]);
  }, 240_000);

  it('to a Kafka target: each change a keyed JSON row on the target topic, deletes included', async () => {
    await source.client.query('create table public.items (sku text primary key, price numeric)');
    await source.client.query(`insert into public.items values ('a-1', 9.5)`);
    const out = `items-${randomUUID().slice(0, 8)}`;
    const created = await api.gw.http
      .post('/api/pipelines/')
      .set(api.t.owner.auth)
      .send({
        name: 'items-to-kafka',
        team_id: api.t.teamId,
        source_name: 'shop-db-items',
        source_type: 'POSTGRES_SOURCE',
        source_config: { ...source.settings, password: SECRET, whitelist: ['public.items'] },
        target_name: 'events',
        target_type: 'KAFKA_TARGET',
        target_config: { bootstrap_server: brokers.join(',') },
        subscription_target_table_name: out,
        subscription_backfill: true,
        subscription_mapper_config: [
          { key: 'sku', path: 'sku', primary_key: true },
          { key: 'price', path: 'price', cast: 'float' },
        ],
      });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await api.gw.http.post(`/api/pipelines/${id}/start`).set(api.t.owner.auth);
    await stateIs(id, 'live');
    await source.client.query(`insert into public.items values ('b-2', 3)`);
    await source.client.query(`update public.items set price = 10 where sku = 'a-1'`);
    await source.client.query(`delete from public.items where sku = 'b-2'`);
    const admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
    try {
      // Empty while the topic does not exist yet.
      const read = () => readTopic(brokers, admin, out);
      const messages = await eventually(read, (m) => m.length >= 4, 60_000, 500);
      // Rows keyed by the primary key, in order per key (the data model's topic
      // has several partitions: keys apart have no order between them). a-1:
      // the snapshot row, then the update; b-2: the insert, then the delete as a
      // tombstone (no value), as Kafka's compaction expects.
      const ofKey = (key: string) =>
        messages.filter((m) => m.key === key).map((m) => (m.value ? JSON.parse(m.value) : null));
      expect(messages).toHaveLength(4);
      expect(ofKey('{"sku":"a-1"}')).toEqual([
        { sku: 'a-1', price: 9.5 },
        { sku: 'a-1', price: 10 },
      ]);
      expect(ofKey('{"sku":"b-2"}')).toEqual([{ sku: 'b-2', price: 3 }, null]);
    } finally {
      await admin.close();
    }
    await api.gw.http.post(`/api/pipelines/${id}/pause`).set(api.t.owner.auth);
    await stateIs(id, 'paused');
  }, 180_000);
});
