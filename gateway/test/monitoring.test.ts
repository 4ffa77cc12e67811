import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type { Condition, ConnectorResource, PipelineResource } from '@sluice/shared/catalog';
import { Admin } from '@platformatic/kafka';
import { assertWorkerBuilt, eventually, newProducer, WORKER_PROGRAM } from '@sluice/testing/kafka-helpers';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { closeScanned, reachState, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { SlotMonitor } from '../src/features/monitoring/monitoring.runner.js';
import { startTestGateway, type TestGateway } from './harness.js';

// Monitoring (and the schema) as a user sees it, on real components: a PostgreSQL →
// PostgreSQL pipeline through the REST API, the embedded operator and its
// monitoring collector, the worker program under the process runtime, the
// real PostgreSQL server and Kafka broker. The counters match the rows
// moved; while the pipeline is paused the gateway measures the replication
// slot, whose retained WAL grows with writes on the source, and past the
// threshold the connector and the pipeline turn Degraded — until the
// restarted pipeline reads the slot again.

const MiB = 1024 * 1024;
const THRESHOLD = 8 * MiB;

describeWithKafka(
  'monitoring of a PostgreSQL → PostgreSQL pipeline (real workers, server and broker)',
  () => {
    const run = randomUUID().slice(0, 8);
    let gw: TestGateway;
    let t: TeamSetup;
    let source: ScratchDatabase;
    let target: ScratchDatabase;
    const saved = { ...process.env };

    beforeAll(async () => {
      assertWorkerBuilt();
      if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
      source = await createScratchDatabase('mon_src');
      target = await createScratchDatabase('mon_tgt');
      await source.client.query(
        'create table public.orders (id int primary key, item text not null, qty int)',
      );
      await source.client.query(
        `insert into public.orders values (1, 'apple', 3), (2, 'pear', 5), (3, 'fig', 1)`,
      );
      // Not captured: its writes only make WAL.
      await source.client.query('create table public.filler (id int, pad text)');
      // Workers inherit these from the process that starts them.
      process.env.SLUICE_STREAM_BROKERS = (testKafkaBrokers() ?? []).join(',');
      process.env.SLUICE_SLOT_RETENTION_INTERVAL_MS = '1000';
      process.env.SLUICE_BATCH_LINGER_MS = '20';
      gw = await startTestGateway('pglite', {
        SLUICE_EMBEDDED_OPERATOR: 'true',
        SLUICE_WORKER_COMMAND: JSON.stringify([process.execPath, WORKER_PROGRAM]),
        // The source is on this machine: the gateway's own measurements must reach it.
        SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128',
        SLUICE_MONITORING_INTERVAL_MS: '1000',
        SLUICE_SLOT_WAL_DEGRADED_BYTES: String(THRESHOLD),
      });
      t = await setupTeam(gw, 'monitoring');
    });
    afterAll(async () => {
      if (gw) await closeScanned(gw);
      process.env = saved;
      await source?.drop();
      await target?.drop();
    });

    const get = async (path: string) => {
      const res = await gw.http.get(path).set(t.owner.auth);
      expect(res.status).toBe(200);
      return res.body as Record<string, unknown>;
    };
    const stateOf = (path: string, state: string) => reachState(gw, t.owner, path, state);
    const targetRows = async () =>
      Number(
        (
          await target.client
            .query('select count(*)::int as n from public.orders_copy')
            .catch(() => ({ rows: [{ n: 0 }] }))
        ).rows[0].n,
      );
    const degraded = async (kind: 'Connector' | 'Pipeline', id: string) => {
      const o = await gw.ctx.cluster.get<ConnectorResource | PipelineResource>(
        kind,
        gw.ctx.config.namespace,
        id,
      );
      return o?.status?.conditions?.find((c: Condition) => c.type === 'Degraded');
    };
    const fill = (rows: number) =>
      source.client.query(
        `insert into public.filler select g, repeat('x', 200) from generate_series(1, $1) g`,
        [rows],
      );

    it('counts the rows moved, and shows the WAL a paused source retains, Degraded past the threshold', async () => {
      const created = await gw.http
        .post('/api/pipelines/')
        .set(t.owner.auth)
        .send({
          name: `mon-${run}`,
          team_id: t.teamId,
          source_name: `mon-src-${run}`,
          source_type: 'POSTGRES_SOURCE',
          source_config: { ...source.settings, whitelist: ['public.orders'] },
          target_name: `mon-dst-${run}`,
          target_type: 'POSTGRES_TARGET',
          target_config: { ...target.settings, schema: 'public' },
          subscription_target_table_name: 'orders_copy',
          subscription_backfill: true,
          subscription_mapper_config: [
            { key: 'id', path: 'id', cast: 'int', primary_key: true },
            { key: 'item', path: 'item' },
            { key: 'qty', path: 'qty', cast: 'int' },
          ],
        });
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      const sourceId = created.body.source_connector_id as string;
      const datamodelId = created.body.datamodel_id as string;

      // Before any worker ran: zeros and nulls.
      expect(await get(`/api/pipelines/${id}/latency-informations`)).toMatchObject({
        messages_in: 0,
        messages_out: 0,
        samples: 0,
        p50_ms: null,
        retained_wal_bytes: null,
      });

      expect((await gw.http.post(`/api/pipelines/${id}/start`).set(t.owner.auth)).body).toBe('BUILDING');
      await stateOf(`/api/pipelines/${id}`, 'live');
      // 3 rows by the snapshot, then 2 inserts and an update by the stream: 6 change events.
      await eventually(targetRows, (n) => n === 3, 60_000);
      await source.client.query(`insert into public.orders values (4, 'plum', 7), (5, 'kiwi', 2)`);
      await source.client.query(`update public.orders set qty = 9 where id = 1`);
      await eventually(targetRows, (n) => n === 5, 60_000);

      const latency = await eventually(
        () => get(`/api/pipelines/${id}/latency-informations`),
        (b) => b.messages_out === 6 && b.messages_in === 6 && b.retained_wal_bytes !== null,
        30_000,
      );
      expect(latency).toMatchObject({
        pipeline_id: id,
        messages_in: 6,
        messages_out: 6,
        errors: 0,
        samples: 6,
      });
      expect(latency.p50_ms as number).toBeGreaterThanOrEqual(0);
      expect(latency.p99_ms as number).toBeGreaterThanOrEqual(latency.p50_ms as number);
      expect(latency.last_event_at).toEqual(expect.any(String));
      expect(latency.retained_wal_bytes as number).toBeLessThan(THRESHOLD);
      const monitoring = await get(`/api/datamodels/${datamodelId}/monitoring`);
      expect(monitoring).toMatchObject({ id: datamodelId, messages_in: 6, messages_out: 6, errors: 0 });
      expect(monitoring.latency_ms).toMatchObject({ samples: 6 });
      expect(await degraded('Connector', sourceId)).toMatchObject({ status: 'False' });
      // The data model's schema: the table's columns, from the source's catalog.
      expect(await get(`/api/datamodels/${datamodelId}/schema`)).toMatchObject({
        source: 'catalog',
        fields: [
          { name: 'id', type: 'integer', nullable: false },
          { name: 'item', type: 'text', nullable: false },
          { name: 'qty', type: 'integer', nullable: true },
        ],
      });

      // Paused: no worker reads the slot; the gateway measures it, and it grows with the source's writes.
      expect((await gw.http.post(`/api/pipelines/${id}/pause`).set(t.owner.auth)).body).toBe('PAUSED');
      await stateOf(`/api/connectors/${sourceId}`, 'paused');
      await fill(5_000);
      await new Promise((r) => setTimeout(r, 1_100)); // past the freshness of the last measurement
      const before = (await get(`/api/pipelines/${id}/latency-informations`)).retained_wal_bytes as number;
      await fill(60_000);
      await new Promise((r) => setTimeout(r, 1_100));
      // The gateway's periodic job measures it without anyone asking…
      await new SlotMonitor(gw.ctx).tick();
      const measured = await gw.ctx.cluster.get<ConnectorResource>(
        'Connector',
        gw.ctx.config.namespace,
        sourceId,
      );
      const grown = measured?.status?.replicationSlot?.retainedWalBytes ?? 0;
      expect(grown).toBeGreaterThan(THRESHOLD);
      expect(grown).toBeGreaterThan(before);
      // …and the endpoints show it (or a newer measurement, once it is older than the interval).
      const shown = await get(`/api/datamodels/${datamodelId}/monitoring`);
      expect(shown.retained_wal_bytes as number).toBeGreaterThanOrEqual(grown);
      expect(shown.retained_wal_measured_at).toEqual(expect.any(String));
      // The counters stay what the workers reported.
      expect(await get(`/api/pipelines/${id}/latency-informations`)).toMatchObject({
        messages_in: 6,
        messages_out: 6,
      });

      const connectorDegraded = await eventually(
        () => degraded('Connector', sourceId),
        (c) => c?.status === 'True',
        30_000,
      );
      expect(connectorDegraded).toMatchObject({ reason: 'ReplicationSlotRetention' });
      expect(connectorDegraded?.message).toMatch(
        /retains [\d.]+ MiB of WAL on the source \(threshold 8\.0 MiB/,
      );
      expect(
        await eventually(
          () => degraded('Pipeline', id),
          (c) => c?.status === 'True',
          30_000,
        ),
      ).toMatchObject({
        reason: 'ReplicationSlotRetention',
      });
      // Still paused: Degraded does not change the state.
      expect((await get(`/api/pipelines/${id}`)).state).toBe('paused');

      // Started again, the worker reads the slot; the server frees the WAL and Degraded clears.
      await gw.http.post(`/api/pipelines/${id}/start`).set(t.owner.auth);
      await stateOf(`/api/pipelines/${id}`, 'live');
      const cleared = await eventually(
        async () => {
          // A checkpoint logs the running transactions, which lets the slot's restart_lsn move on.
          await source.client.query('checkpoint');
          return degraded('Connector', sourceId);
        },
        (c) => c?.status === 'False',
        60_000,
        1_000,
      );
      expect(cleared?.reason).toBe('Live');
      expect(
        await eventually(
          () => degraded('Pipeline', id),
          (c) => c?.status === 'False',
          30_000,
        ),
      ).toBeDefined();
      expect(
        (await get(`/api/pipelines/${id}/latency-informations`)).retained_wal_bytes as number,
      ).toBeLessThan(THRESHOLD);

      // Paused again, and the slot dropped by hand: nothing is retained any more.
      await gw.http.post(`/api/pipelines/${id}/pause`).set(t.owner.auth);
      await stateOf(`/api/connectors/${sourceId}`, 'paused');
      await eventually(
        async () =>
          (
            await source.client.query<{ n: number }>(
              'select count(*)::int as n from pg_replication_slots where database = current_database() and active',
            )
          ).rows[0]?.n,
        (n) => n === 0,
        30_000,
      );
      await source.client.query(
        'select pg_drop_replication_slot(slot_name) from pg_replication_slots where database = current_database()',
      );
      await new Promise((r) => setTimeout(r, 1_100));
      expect(await get(`/api/pipelines/${id}/latency-informations`)).toMatchObject({
        retained_wal_bytes: null,
        retained_wal_measured_at: null,
      });
    }, 240_000);

    it("infers a Kafka source's schema from the recent JSON messages of its topic", async () => {
      const brokers = testKafkaBrokers() ?? [];
      const topic = `mon-events-${run}`;
      const admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
      const producer = newProducer(brokers);
      try {
        await admin.createTopics({ topics: [topic], partitions: 1, replicas: 1 });
        await producer.send({
          messages: [
            { topic, value: JSON.stringify({ order: { id: 1, total: 2.5 }, note: 'a' }) },
            { topic, value: JSON.stringify({ order: { id: 2, total: 3 }, note: null }) },
          ],
        });
      } finally {
        await producer.close();
        await admin.close();
      }
      const created = await gw.http
        .post('/api/connectors/')
        .set(t.owner.auth)
        .send({
          name: `mon-kafka-${run}`,
          connector_type: 'KAFKA_SOURCE',
          team_id: t.teamId,
          json_configuration: { topic, bootstrap_servers: brokers.join(',') },
        });
      expect(created.status).toBe(201);
      const datamodelId = (created.body.datamodel_ids as string[])[0];
      expect(await get(`/api/datamodels/${datamodelId}/schema`)).toMatchObject({
        source: 'messages',
        fields: [
          { name: 'order|id', type: 'integer', nullable: false },
          { name: 'order|total', type: 'number', nullable: false },
          { name: 'note', type: 'string', nullable: true },
        ],
      });
    });
  },
);
