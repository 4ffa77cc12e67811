import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Admin } from '@platformatic/kafka';
import type { SluiceKind } from '@sluice/shared/ports';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import {
  assertWorkerBuilt,
  eventually,
  newProducer,
  topicSize,
  WORKER_PROGRAM,
} from '@sluice/testing/kafka-helpers';
import { stopDeletionRunner } from '../src/features/deletions/deletions.runner.js';
import type { GatewayContext } from '../src/context.js';
import { databaseKinds, type TestUser } from './harness.js';
import { createEnv } from './catalog-fixtures.js';
import { startRestartableGateway, type RestartableGateway } from './restartable-gateway.js';

// Deleting a team whose pipelines run (docs/api.md "Deletions"): a Kafka →
// Kafka pipeline on the real broker and a PostgreSQL CDC source holding its
// replication slot, both live under the embedded operator's real worker
// processes. After DELETE /teams/{id} the team's objects are gone from every
// read at once; then the workers stop (none is left running), the slot and
// the custom resources are gone. A gateway restart in the middle of the
// deletion resumes it.

describeWithKafka('deleting a team whose pipelines run (real workers, real broker, PostgreSQL slot)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const saved = { ...process.env };
  let admin: Admin;

  beforeAll(async () => {
    assertWorkerBuilt();
    if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
    // Workers inherit the platform broker from the process that starts them.
    process.env.SLUICE_STREAM_BROKERS = brokers.join(',');
    process.env.SLUICE_BATCH_LINGER_MS = '20';
    admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
  });
  afterAll(async () => {
    await admin?.close();
    process.env = saved;
  });

  describe.each(databaseKinds())('on %s', (kind) => {
    let gw: RestartableGateway;
    let source: ScratchDatabase;
    afterEach(async () => {
      await gw?.close();
      await source?.drop();
    });

    const start = async () => {
      source = await createScratchDatabase('del_src');
      await source.client.query('create table public.orders (id int primary key, item text)');
      await source.client.query(`insert into public.orders values (1, 'apple')`);
      gw = await startRestartableGateway(kind, {
        SLUICE_EMBEDDED_OPERATOR: 'true',
        SLUICE_WORKER_COMMAND: JSON.stringify([process.execPath, WORKER_PROGRAM]),
        // The gateway reaches the source to drop its slot.
        SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128',
        SLUICE_SCHEDULER: 'true',
        SLUICE_SCHEDULER_INTERVAL_MS: '500',
      });
      const owner = await gw.user();
      const su = await gw.superuser();
      const envId = await createEnv(gw, owner, `env-${randomUUID()}`);
      const teamId = (
        await gw.http.post(`/api/teams/?env_id=${envId}`).set(owner.auth).send({ name: 'doomed' })
      ).body.id as string;
      return { owner, su, teamId };
    };

    const state = async (u: TestUser, path: string, want: string, timeoutMs = 90_000) => {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const res = await gw.http.get(path).set(u.auth);
        const now = res.body.state ?? res.body.status;
        if (now === want) return res.body as Record<string, unknown>;
        if (now === 'error' || Date.now() > deadline)
          throw new Error(`${path} did not reach ${want}: ${res.status} ${JSON.stringify(res.body)}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    };
    const slots = async () =>
      (
        await source.client.query<{ slot_name: string }>(
          'select slot_name from pg_replication_slots where database = current_database()',
        )
      ).rows.map((r) => r.slot_name);
    const workers = () => {
      const dir = join(gw.dataDir, 'workers');
      return existsSync(dir) ? readdirSync(dir) : [];
    };

    /** A live Kafka → Kafka pipeline and a live PostgreSQL CDC → Kafka pipeline in the team. */
    const livePipelines = async (owner: TestUser, teamId: string) => {
      const run = randomUUID().slice(0, 8);
      const topic = `del-in-${run}`;
      await admin.createTopics({ topics: [topic], partitions: 1, replicas: 1 });
      const kafka = await gw.http
        .post('/api/pipelines/')
        .set(owner.auth)
        .send({
          name: `kafka-${run}`,
          team_id: teamId,
          source_name: `kafka-src-${run}`,
          source_type: 'KAFKA_SOURCE',
          source_config: { topic, bootstrap_servers: brokers.join(',') },
          target_name: `kafka-dst-${run}`,
          target_type: 'KAFKA_TARGET',
          target_config: { bootstrap_server: brokers.join(',') },
          subscription_target_table_name: `del-out-${run}`,
          subscription_mapper_config: [{ key: 'id', path: 'id', cast: 'int', primary_key: true }],
        });
      expect(kafka.status).toBe(201);
      const cdc = await gw.http
        .post('/api/pipelines/')
        .set(owner.auth)
        .send({
          name: `cdc-${run}`,
          team_id: teamId,
          source_name: `cdc-src-${run}`,
          source_type: 'POSTGRES_SOURCE',
          source_config: { ...source.settings, whitelist: ['public.orders'] },
          target_name: `cdc-dst-${run}`,
          target_type: 'KAFKA_TARGET',
          target_config: { bootstrap_server: brokers.join(',') },
          subscription_target_table_name: `del-cdc-${run}`,
          subscription_mapper_config: [{ key: 'id', path: 'id', cast: 'int', primary_key: true }],
        });
      expect(cdc.status).toBe(201);
      for (const p of [kafka.body, cdc.body]) {
        expect((await gw.http.post(`/api/pipelines/${p.id}/start`).set(owner.auth)).status).toBe(202);
      }
      for (const p of [kafka.body, cdc.body]) await state(owner, `/api/pipelines/${p.id}`, 'live');
      // Data flows: a message produced on the source topic reaches the target topic.
      const producer = newProducer(brokers);
      try {
        await producer.send({ messages: [{ topic, value: JSON.stringify({ id: 1 }) }] });
      } finally {
        await producer.close();
      }
      await eventually(
        () => topicSize(admin, `del-out-${run}`).catch(() => 0),
        (n) => n >= 1,
        60_000,
        250,
      );
      expect(await slots()).toHaveLength(1);
      // Four workers: two sources, two targets.
      expect(workers()).toHaveLength(4);
      return [kafka.body, cdc.body] as Record<string, string>[];
    };

    const expectNothingLeft = async (su: TestUser, pipelines: Record<string, string>[]) => {
      const ns = gw.ctx.config.namespace;
      for (const p of pipelines) {
        expect(await gw.ctx.cluster.get('Pipeline', ns, p.id!)).toBeUndefined();
        for (const c of [p.source_connector_id!, p.target_connector_id!]) {
          expect(await gw.ctx.cluster.get('Connector', ns, c)).toBeUndefined();
          expect((await gw.http.get(`/api/connectors/${c}`).set(su.auth)).status).toBe(404);
        }
        expect(await gw.ctx.cluster.get('Subscription', ns, p.subscription_id!)).toBeUndefined();
        expect(await gw.ctx.cluster.get('DataModel', ns, p.datamodel_id!)).toBeUndefined();
      }
      // No worker runs: the process runtime removes a worker's directory once its process has exited.
      expect(
        await eventually(
          async () => workers(),
          (w) => w.length === 0,
          30_000,
          250,
        ),
      ).toEqual([]);
      expect(await slots()).toEqual([]);
    };
    const finished = async (su: TestUser, id: string) => {
      const deadline = Date.now() + 120_000;
      for (;;) {
        const res = await gw.http.get(`/api/deletions/${id}`).set(su.auth);
        if (res.body.state === 'succeeded') return res.body as Record<string, unknown>;
        if (Date.now() > deadline) throw new Error(`deletion not done: ${JSON.stringify(res.body)}`);
        await new Promise((r) => setTimeout(r, 250));
      }
    };

    it('DELETE /teams/{id} with live pipelines: gone from reads at once, then the workers stop and the slot is dropped', async () => {
      const { owner, su, teamId } = await start();
      const pipelines = await livePipelines(owner, teamId);
      expect((await gw.http.delete(`/api/teams/${teamId}`).set(owner.auth)).status).toBe(204);
      for (const p of pipelines) {
        expect((await gw.http.get(`/api/pipelines/${p.id}`).set(owner.auth)).status).toBe(404);
        expect((await gw.http.get(`/api/pipelines/${p.id}`).set(su.auth)).status).toBe(404);
      }
      for (const k of ['pipelines', 'connectors', 'datamodels', 'subscriptions']) {
        expect((await gw.http.get(`/api/${k}/`).set(su.auth)).body.items).toEqual([]);
      }
      const [deletion] = (await gw.http.get('/api/deletions/').set(su.auth)).body.items;
      const done = await finished(su, deletion.id);
      expect(done.progress).toMatchObject({
        pipelines: { total: 2, deleted: 2 },
        subscriptions: { total: 2, deleted: 2 },
        datamodels: { total: 2, deleted: 2 },
        connectors: { total: 4, deleted: 4 },
      });
      await expectNothingLeft(su, pipelines);
    }, 300_000);

    it('a gateway restart in the middle of the deletion resumes it: the workers stay stopped and the slot goes', async () => {
      const { owner, su, teamId } = await start();
      const pipelines = await livePipelines(owner, teamId);
      // The runner is held at the first subscription it deletes (after the pipelines, before
      // the rest), so that the stop always finds work left: the gate opens only once the
      // runner has been asked to stop, and the subscription it was on is its last object.
      const held = holdFirstDelete(gw.ctx, 'Subscription');
      expect((await gw.http.delete(`/api/teams/${teamId}`).set(owner.auth)).status).toBe(204);
      const [deletion] = (await gw.http.get('/api/deletions/').set(su.auth)).body.items;
      await held.reached;
      const midway = await gw.ctx.db
        .selectFrom('deletions')
        .selectAll()
        .where('id', '=', deletion.id)
        .executeTakeFirstOrThrow();
      expect(midway.state).toBe('running');
      expect(midway.progress).toMatchObject({ pipelines: { deleted: 2 }, subscriptions: { deleted: 0 } });
      // The gateway's shutdown stops the runner between two objects (first, here, so that the
      // rest of the shutdown does not give it time to finish), then everything else.
      const stopping = stopDeletionRunner(gw.ctx);
      held.open();
      await stopping;
      await gw.restart();
      const after = (await gw.http.get(`/api/deletions/${deletion.id}`).set(su.auth)).body;
      expect(after.state).not.toBe('succeeded');
      const done = await finished(su, deletion.id);
      expect(done.attempts).toBeGreaterThanOrEqual(2);
      expect(done.progress).toMatchObject({ pipelines: { total: 2, deleted: 2 } });
      await expectNothingLeft(su, pipelines);
    }, 300_000);
  });
});

/**
 * Holds the first delete of `kind` the gateway's catalog makes until `open`:
 * `reached` resolves once the runner waits there. Only that one call waits,
 * and only in this context (a restarted gateway has a catalog of its own).
 */
function holdFirstDelete(ctx: GatewayContext, kind: SluiceKind): { reached: Promise<void>; open(): void } {
  const { catalog } = ctx;
  const original = catalog.delete.bind(catalog);
  let arrive!: () => void;
  let release!: () => void;
  const reached = new Promise<void>((r) => (arrive = r));
  const gate = new Promise<void>((r) => (release = r));
  let armed = true;
  catalog.delete = async (k, id) => {
    if (armed && k === kind) {
      armed = false;
      arrive();
      await gate;
    }
    return original(k, id);
  };
  return { reached, open: release };
}
