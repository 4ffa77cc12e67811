import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Admin, type Producer } from '@platformatic/kafka';
import type { SubscriptionResource } from '@sluice/shared/catalog';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { startBastion } from '@sluice/testing/sshd';
import {
  assertWorkerBuilt,
  eventually,
  newProducer,
  readOneAsGroup,
  WORKER_PROGRAM,
} from '@sluice/testing/kafka-helpers';
import {
  closeScanned,
  createConnector,
  SECRETS,
  reachState,
  setupTeam,
  type TeamSetup,
} from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';
import { autoBackfills } from '../src/features/backfills/backfills.auto.js';
import { LOOKING, NOT_READ_YET, TURNED_ON_LATER } from '../src/features/backfills/backfills.reasons.js';
import { autoDecisionOf } from '../src/features/backfills/backfills.repository.js';
import { backfillRunner, stopBackfillRunner } from '../src/features/backfills/backfills.runner.js';

// Backfills (spec 4.7) as a user drives them, on the real broker and the real
// PostgreSQL server: no worker runs — the gateway replays the source topic
// (or re-reads the source table) through the target worker's mapper and sink.

const N = 50;
const MAPPER = [
  { key: 'order_id', path: 'order|id', cast: 'int', primary_key: true },
  { key: 'total', path: 'order|total', cast: 'float' },
];

// The service database holds the runs and their progress: both kinds the gateway runs on.
for (const kind of databaseKinds()) {
  describeWithKafka(`backfills (real broker, real PostgreSQL; service database ${kind})`, () => {
    const brokers = testKafkaBrokers() ?? [];
    const run = randomUUID().slice(0, 8);
    const topic = `bf-orders-${run}`;
    const otherTopic = `bf-other-${run}`;
    let gw: TestGateway;
    let t: TeamSetup;
    let admin: Admin;
    let producer: Producer<string, string, string, string>;
    let target: ScratchDatabase;
    let pgSource: ScratchDatabase;
    let hooks: Server;
    let hookUrl = '';
    const hookBatches: number[] = [];
    let releaseHook: (() => void) | undefined;
    let holdHook = false;

    // Kafka source → PostgreSQL target; a second data model (other source) for the 422s.
    let source: { id: string; datamodel_ids: string[] };
    let otherSource: { id: string; datamodel_ids: string[] };
    let pgTarget: { id: string };
    let hookTarget: { id: string };
    let unsubscribed: { id: string };

    beforeAll(async () => {
      if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
      // Small batches, so a run spans several and a cancel lands between two.
      process.env.SLUICE_BACKFILL_BATCH_SIZE = '10';
      gw = await startTestGateway(kind, { SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128' });
      t = await setupTeam(gw, 'backfills');
      admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
      producer = newProducer(brokers);
      await admin.createTopics({ topics: [topic, otherTopic], partitions: 2, replicas: 1 });
      // Several sends: several record batches per partition.
      for (let i = 0; i < N; i += 10) {
        await producer.send({
          messages: Array.from({ length: 10 }, (_, j) => ({
            topic,
            value: JSON.stringify({ order: { id: i + j + 1, total: `${i + j + 1}.5` } }),
          })),
        });
      }
      target = await createScratchDatabase('bf_tgt');
      pgSource = await createScratchDatabase('bf_src');
      // Inline passwords go to the secret store and reach the connections through it; closeScanned
      // checks that none shows in a response or a log line (the test server trusts local logins).
      target.settings.password = SECRETS.pgTarget;
      pgSource.settings.password = SECRETS.pgSource;
      hooks = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const rows = JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown;
          hookBatches.push(Array.isArray(rows) ? rows.length : 1);
          const answer = () => {
            if (!res.headersSent) res.writeHead(200).end('{}');
          };
          if (holdHook) releaseHook = answer;
          else answer();
        });
      });
      await new Promise<void>((r) => hooks.listen(0, '127.0.0.1', r));
      hookUrl = `http://127.0.0.1:${(hooks.address() as AddressInfo).port}/hook`;

      const team = t.teamId;
      source = await createConnector(gw, t.owner, team, `bf-src-${run}`, 'KAFKA_SOURCE', {
        topic,
        bootstrap_servers: brokers.join(','),
      });
      otherSource = await createConnector(gw, t.owner, team, `bf-src2-${run}`, 'KAFKA_SOURCE', {
        topic: otherTopic,
        bootstrap_servers: brokers.join(','),
      });
      pgTarget = await createConnector(gw, t.owner, team, `bf-pg-${run}`, 'POSTGRES_TARGET', {
        ...target.settings,
      });
      hookTarget = await createConnector(gw, t.owner, team, `bf-hook-${run}`, 'WEBHOOK_TARGET', {
        url: hookUrl,
        batch_size: 10,
      });
      unsubscribed = await createConnector(gw, t.owner, team, `bf-none-${run}`, 'POSTGRES_TARGET', {
        ...target.settings,
      });
      await subscribe(source.datamodel_ids[0]!, pgTarget.id, 'orders_copy');
      await subscribe(source.datamodel_ids[0]!, hookTarget.id, 'orders_hook');
    }, 120_000);

    afterAll(async () => {
      releaseHook?.();
      await producer?.close();
      await admin?.close();
      hooks?.closeAllConnections();
      await new Promise((r) => (hooks ? hooks.close(r) : r(undefined)));
      if (gw) await closeScanned(gw);
      await target?.drop();
      await pgSource?.drop();
    });

    async function subscribe(datamodel_id: string, target_connector_id: string, table: string) {
      const res = await gw.http
        .post('/api/subscriptions/')
        .set(t.owner.auth)
        .send({ datamodel_id, target_connector_id, target_table_name: table, mapper_config: MAPPER });
      if (res.status !== 201) throw new Error(`subscription: ${res.status} ${JSON.stringify(res.body)}`);
      return res.body.id as string;
    }
    const post = (path: string, body?: object) => gw.http.post(path).set(t.owner.auth).send(body);
    const status = (sourceId: string) =>
      gw.http.get(`/api/backfills/status?source_connector_id=${sourceId}`).set(t.owner.auth);
    /** The subscription's automatic re-snapshot, as GET /subscriptions/{id} shows it. */
    const autoOf = async (id: string) => {
      const res = await gw.http.get(`/api/subscriptions/${id}`).set(t.owner.auth);
      expect(res.status).toBe(200);
      return res.body.auto_backfill;
    };
    /** One pass of the automatic re-snapshots (age bound one hour), by subscription. */
    const tick = async () =>
      Object.fromEntries((await autoBackfills(gw.ctx, 3_600_000)).map((o) => [o.subscriptionId, o]));
    /** PATCH backfill: true, as a user turns it on after the subscription's creation. */
    const turnOnBackfill = async (id: string) => {
      const res = await gw.http.patch(`/api/subscriptions/${id}`).set(t.owner.auth).send({ backfill: true });
      expect(res.status).toBe(200);
      return res;
    };
    /** The decision as the Subscription resource's status shows it. */
    const statusOf = async (id: string) =>
      (await gw.ctx.cluster.get<SubscriptionResource>('Subscription', gw.ctx.config.namespace, id))?.status
        ?.autoBackfill;
    const ended = (sourceId: string) =>
      eventually(
        async () => (await status(sourceId)).body as { state: string; [k: string]: unknown },
        (b) => ['succeeded', 'failed', 'cancelled'].includes(b.state),
        60_000,
      );
    /** A run into the webhook target whose receiver holds each request until `releaseHook`. */
    const startHeldRun = async () => {
      holdHook = true;
      hookBatches.length = 0;
      const started = await post('/api/backfills/', {
        source_connector_ids: [source.id],
        datamodel_ids: [],
        target_connector_ids: [hookTarget.id],
      });
      expect(started.status).toBe(202);
      return started;
    };
    const targetRows = async (table: string) =>
      (
        await target.client.query<{ order_id: number; total: number }>(
          `select order_id::int as order_id, total::float8 as total from public.${table} order by order_id`,
        )
      ).rows;

    it('preview: one item per subscription, mode stream, N estimated messages; nothing written', async () => {
      const res = await post('/api/backfills/preview', {
        source_connector_ids: [source.id],
        datamodel_ids: [],
        target_connector_ids: [pgTarget.id],
      });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        items: [
          {
            source_connector_id: source.id,
            datamodel_id: source.datamodel_ids[0],
            datamodel_name: expect.any(String),
            target_connector_id: pgTarget.id,
            subscription_id: expect.any(String),
            target_table_name: 'orders_copy',
            mode: 'stream',
            estimated_messages: N,
          },
        ],
        estimated_messages: N,
      });
      // Every target subscribed: two pairs.
      const all = await post('/api/backfills/preview', {
        source_connector_ids: [source.id],
        datamodel_ids: [source.datamodel_ids[0]],
        target_connector_ids: [],
      });
      expect(
        all.body.items.map((i: { target_connector_id: string }) => i.target_connector_id).sort(),
      ).toEqual([pgTarget.id, hookTarget.id].sort());
      expect(all.body.estimated_messages).toBe(2 * N);
      const exists = await target.client.query(`select to_regclass('public.orders_copy') is not null as ok`);
      expect(exists.rows[0].ok).toBe(false);
      expect((await status(source.id)).status).toBe(404);
    });

    it('rejects bad requests with located 422s, 403 for another team, and writes nothing', async () => {
      const bad = await post('/api/backfills/', {
        source_connector_ids: [randomUUID()],
        datamodel_ids: [otherSource.datamodel_ids[0]],
        target_connector_ids: [unsubscribed.id],
      });
      expect(bad.status).toBe(422);
      expect(bad.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual([
        ['body', 'source_connector_ids', 0],
        ['body', 'datamodel_ids', 0],
      ]);
      // A data model of another source.
      const foreignDm = await post('/api/backfills/preview', {
        source_connector_ids: [source.id],
        datamodel_ids: [otherSource.datamodel_ids[0]],
        target_connector_ids: [],
      });
      expect(foreignDm.status).toBe(422);
      expect(foreignDm.body.detail[0].loc).toEqual(['body', 'datamodel_ids', 0]);
      // A target that subscribes to none of the data models.
      const notSubscribed = await post('/api/backfills/', {
        source_connector_ids: [source.id],
        datamodel_ids: [],
        target_connector_ids: [pgTarget.id, unsubscribed.id],
      });
      expect(notSubscribed.status).toBe(422);
      expect(notSubscribed.body.detail).toEqual([
        {
          loc: ['body', 'target_connector_ids', 1],
          msg: expect.stringMatching(/subscribes/),
          type: 'value_error',
        },
      ]);
      // A target among the sources.
      const wrongDirection = await post('/api/backfills/preview', {
        source_connector_ids: [pgTarget.id],
        datamodel_ids: [],
        target_connector_ids: [],
      });
      expect(wrongDirection.body.detail[0]).toMatchObject({
        loc: ['body', 'source_connector_ids', 0],
        msg: 'Not a source connector',
      });
      const empty = await post('/api/backfills/', {
        source_connector_ids: [],
        datamodel_ids: [],
        target_connector_ids: [],
      });
      expect(empty.status).toBe(422);
      const outsider = await gw.http
        .post('/api/backfills/')
        .set(t.outsider.auth)
        .send({ source_connector_ids: [source.id], datamodel_ids: [], target_connector_ids: [] });
      expect(outsider.status).toBe(403);
      expect(
        (await gw.http.get(`/api/backfills/status?source_connector_id=${source.id}`).set(t.outsider.auth))
          .status,
      ).toBe(403);
      expect((await status(randomUUID())).status).toBe(404);
      expect((await post(`/api/backfills/${randomUUID()}/cancel`)).status).toBe(404);
      // Nothing was started.
      expect((await status(source.id)).status).toBe(404);
    });

    it('stream replay into PostgreSQL: succeeded, exactly N mapped rows; again: still N (upserts)', async () => {
      const body = {
        source_connector_ids: [source.id],
        datamodel_ids: [],
        target_connector_ids: [pgTarget.id],
      };
      const started = await post('/api/backfills/', body);
      expect(started.status).toBe(202);
      expect(['pending', 'running', 'succeeded']).toContain(started.body.state);
      expect(started.body.estimated_messages).toBe(N);
      const done = await ended(source.id);
      expect(done).toMatchObject({
        id: started.body.id,
        state: 'succeeded',
        messages_replayed: N,
        error: null,
        items: [expect.objectContaining({ state: 'succeeded', messages_replayed: N, mode: 'stream' })],
      });
      const rows = await targetRows('orders_copy');
      expect(rows).toHaveLength(N);
      expect(rows[2]).toEqual({ order_id: 3, total: 3.5 });
      expect(rows.map((r) => r.order_id)).toEqual(Array.from({ length: N }, (_, i) => i + 1));
      // No consumer group was joined or committed: the live subscription's group is untouched.
      const groups = [...(await admin.listGroups()).keys()];
      // (Only this test's: the broker is shared with the other suites and their groups.)
      expect(groups.filter((g) => g.includes(source.id) || g.startsWith('sluice-backfill'))).toEqual([]);

      // A second run replays the same messages: the upserts leave N rows.
      const again = await post('/api/backfills/', body);
      expect(again.status).toBe(202);
      expect((await ended(source.id)).state).toBe('succeeded');
      expect(await targetRows('orders_copy')).toHaveLength(N);
      // An ended run cannot be cancelled.
      expect((await post(`/api/backfills/${again.body.id}/cancel`)).status).toBe(409);
    }, 90_000);

    it('a second run of an active source is a 409; a cancel stops the run between two batches', async () => {
      const started = await startHeldRun();
      // The first batch is at the receiver, which holds it.
      await eventually(
        async () => hookBatches.length,
        (n) => n >= 1,
        30_000,
      );
      const second = await post('/api/backfills/preview', {
        source_connector_ids: [source.id],
        datamodel_ids: [],
        target_connector_ids: [],
      });
      expect(second.status).toBe(200); // a preview is always allowed
      const conflict = await post('/api/backfills/', {
        source_connector_ids: [source.id],
        datamodel_ids: [],
        target_connector_ids: [pgTarget.id],
      });
      expect(conflict.status).toBe(409);

      const cancel = await post(`/api/backfills/${started.body.id}/cancel`);
      expect(cancel.status).toBe(202);
      expect(cancel.body).toMatchObject({ state: 'running', cancel_requested: true });
      holdHook = false;
      releaseHook?.();
      const done = await ended(source.id);
      expect(done).toMatchObject({ id: started.body.id, state: 'cancelled', messages_replayed: 10 });
      expect(hookBatches).toEqual([10]);
      // The source is free again.
      expect((await status(source.id)).body.state).toBe('cancelled');
    }, 90_000);

    it('a run whose gateway stopped mid-way is resumed from its recorded progress by another runner', async () => {
      const started = await startHeldRun();
      // First batch confirmed, the second held at the receiver: then the gateway's runner stops.
      await eventually(
        async () => hookBatches.length,
        (n) => n >= 1,
        30_000,
      );
      releaseHook?.();
      await eventually(
        async () => hookBatches.length,
        (n) => n >= 2,
        30_000,
      );
      await stopBackfillRunner(gw.ctx);
      holdHook = false;
      const stopped = (await status(source.id)).body;
      // The unconfirmed batch is not counted: the run stands after the first one.
      expect(stopped).toMatchObject({ state: 'running', messages_replayed: 10 });
      // A new runner (a restarted gateway, or another replica) takes the released run over.
      expect(await backfillRunner(gw.ctx).resume()).toEqual([started.body.id]);
      const done = await ended(source.id);
      expect(done).toMatchObject({ state: 'succeeded', messages_replayed: N });
      // Batches confirmed before the stop are not sent again; the one cut short at most is.
      const sent = hookBatches.reduce((a, b) => a + b, 0);
      expect(sent).toBeGreaterThanOrEqual(N);
      expect(sent).toBeLessThanOrEqual(N + 10);
    }, 90_000);

    it('re-snapshots a PostgreSQL source table into a PostgreSQL target (keyset pages, upserts)', async () => {
      await pgSource.client.query(
        'create table public.items (id int primary key, item text not null, qty int)',
      );
      await pgSource.client.query(
        `insert into public.items select g, 'item-' || g, g * 2 from generate_series(1, 35) g`,
      );
      const src = await createConnector(gw, t.owner, t.teamId, `bf-pgsrc-${run}`, 'POSTGRES_SOURCE', {
        ...pgSource.settings,
        whitelist: ['public.items'],
      });
      const res = await gw.http
        .post('/api/subscriptions/')
        .set(t.owner.auth)
        .send({
          datamodel_id: src.datamodel_ids[0],
          target_connector_id: pgTarget.id,
          target_table_name: 'items_copy',
          mapper_config: [
            { key: 'id', path: 'id', cast: 'int', primary_key: true },
            { key: 'item', path: 'item' },
            { key: 'qty', path: 'qty', cast: 'int' },
          ],
        });
      expect(res.status).toBe(201);
      const body = { source_connector_ids: [src.id], datamodel_ids: [], target_connector_ids: [] };
      const preview = await post('/api/backfills/preview', body);
      expect(preview.body).toMatchObject({
        items: [{ mode: 'snapshot', estimated_messages: 35, target_table_name: 'items_copy' }],
      });
      const started = await post('/api/backfills/', body);
      expect(started.status).toBe(202);
      const done = await ended(src.id);
      expect(done).toMatchObject({ state: 'succeeded', messages_replayed: 35 });
      const rows = (
        await target.client.query(
          'select id::int as id, item, qty::int as qty from public.items_copy order by id',
        )
      ).rows;
      expect(rows).toHaveLength(35);
      expect(rows[34]).toEqual({ id: 35, item: 'item-35', qty: 70 });
    }, 90_000);

    it('a run that cannot complete ends failed with one sentence, and frees its source', async () => {
      await pgSource.client.query('create table public.nokey (id int, item text)');
      await pgSource.client.query(`insert into public.nokey values (1, 'a'), (2, 'b')`);
      const src = await createConnector(gw, t.owner, t.teamId, `bf-nokey-${run}`, 'POSTGRES_SOURCE', {
        ...pgSource.settings,
        whitelist: ['public.nokey'],
      });
      await subscribe(src.datamodel_ids[0]!, pgTarget.id, 'nokey_copy');
      const body = { source_connector_ids: [src.id], datamodel_ids: [], target_connector_ids: [] };
      expect((await post('/api/backfills/preview', body)).body.estimated_messages).toBe(2);
      expect((await post('/api/backfills/', body)).status).toBe(202);
      const done = await ended(src.id);
      expect(done).toMatchObject({
        state: 'failed',
        messages_replayed: 0,
        items: [
          expect.objectContaining({ state: 'failed', error: expect.stringMatching(/has no primary key/) }),
        ],
      });
      expect(done.error).toMatch(/^[^\n]+has no primary key: a re-snapshot reads tables in key order$/);
      expect(String(done.error)).not.toMatch(/\bat .+:\d+/);
      // Ended: the source is free for another run.
      expect((await post('/api/backfills/', body)).status).toBe(202);
      expect((await ended(src.id)).state).toBe('failed');
    }, 60_000);

    it('a source and a target behind an SSH bastion are read and written through it; a bad key is said, never a direct connection', async () => {
      const bastion = await startBastion();
      try {
        await pgSource.client.query('create table public.tunnelled (id int primary key, item text not null)');
        await pgSource.client.query(
          `insert into public.tunnelled select g, 'item-' || g from generate_series(1, 25) g`,
        );
        const team = t.teamId;
        const src = await createConnector(gw, t.owner, team, `bf-ssh-${run}`, 'POSTGRES_SOURCE', {
          ...pgSource.settings,
          whitelist: ['public.tunnelled'],
          ...bastion.tunnelFields(),
        });
        const tgt = await createConnector(gw, t.owner, team, `bf-ssh-tgt-${run}`, 'POSTGRES_TARGET', {
          ...target.settings,
          ...bastion.tunnelFields(),
        });
        const sub = await gw.http
          .post('/api/subscriptions/')
          .set(t.owner.auth)
          .send({
            datamodel_id: src.datamodel_ids[0],
            target_connector_id: tgt.id,
            target_table_name: 'tunnelled_copy',
            mapper_config: [
              { key: 'id', path: 'id', cast: 'int', primary_key: true },
              { key: 'item', path: 'item' },
            ],
          });
        expect(sub.status).toBe(201);
        const body = { source_connector_ids: [src.id], datamodel_ids: [], target_connector_ids: [] };
        expect((await post('/api/backfills/preview', body)).body).toMatchObject({
          items: [{ mode: 'snapshot', estimated_messages: 25, target_table_name: 'tunnelled_copy' }],
        });
        expect((await post('/api/backfills/', body)).status).toBe(202);
        expect(await ended(src.id)).toMatchObject({ state: 'succeeded', messages_replayed: 25 });
        const { rows } = await target.client.query('select count(*)::int as n from public.tunnelled_copy');
        expect(rows).toEqual([{ n: 25 }]);
      } finally {
        await bastion.close();
      }

      const bad = await createConnector(gw, t.owner, t.teamId, `bf-ssh-bad-${run}`, 'POSTGRES_SOURCE', {
        ...pgSource.settings,
        whitelist: ['public.items'],
        ssh_host: 'bastion.example.com',
        ssh_user: 'sluice',
        ssh_private_key: '-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-key\n-----END OPENSSH PRIVATE KEY-----',
      });
      await subscribe(bad.datamodel_ids[0]!, pgTarget.id, 'ssh_copy');
      const res = await post('/api/backfills/preview', {
        source_connector_ids: [bad.id],
        datamodel_ids: [],
        target_connector_ids: [],
      });
      expect(res.status).toBe(400);
      expect(res.body.detail).toBe(
        `Cannot read the source connector ${bad.id}: The SSH private key (ssh_private_key) could not be ` +
          'read: use an Ed25519, ECDSA or RSA key in OpenSSH or PEM encoding',
      );
    }, 90_000);

    it('a new subscription with backfill is re-snapshotted once its pipeline is live, when its stream lacks the snapshot', async () => {
      // The gateway reads database sources' change streams on the platform broker.
      process.env.SLUICE_STREAM_BROKERS = brokers.join(',');
      for (const table of ['parts', 'tools']) {
        await pgSource.client.query(`create table public.${table} (id int primary key, name text)`);
        await pgSource.client.query(
          `insert into public.${table} select g, '${table}-' || g from generate_series(1, 12) g`,
        );
      }
      const src = await createConnector(gw, t.owner, t.teamId, `bf-auto-${run}`, 'POSTGRES_SOURCE', {
        ...pgSource.settings,
        whitelist: ['public.parts', 'public.tools'],
      });
      const dmOf: Record<string, string> = {};
      for (const id of src.datamodel_ids) {
        const dm = await gw.http.get(`/api/datamodels/${id}`).set(t.owner.auth);
        dmOf[String(dm.body.entry ?? dm.body.name).replace(/^public\./, '')] = id;
      }
      // parts' stream begins with a live change (a table added after the source's first start);
      // tools' stream begins with the snapshot the source worker published.
      const event = (dm: string, op: string, snapshot: boolean, id: number) =>
        JSON.stringify({
          op,
          before: null,
          after: { id, name: `streamed-${id}` },
          key: { id },
          source: { connector_id: src.id, datamodel_id: dm, entry: 'x', position: '0/1', snapshot, ts_ms: 1 },
          emitted_ms: 1,
        });
      await admin.createTopics({
        topics: [`sluice.${dmOf.parts}`, `sluice.${dmOf.tools}`],
        partitions: 2,
        replicas: 1,
      });
      await producer.send({
        messages: [
          { topic: `sluice.${dmOf.parts}`, value: event(dmOf.parts!, 'c', false, 99) },
          { topic: `sluice.${dmOf.tools}`, value: event(dmOf.tools!, 'r', true, 1) },
        ],
      });
      const subscribeWithBackfill = async (datamodel_id: string, table: string, backfill: boolean) => {
        const res = await post('/api/subscriptions/', {
          datamodel_id,
          target_connector_id: pgTarget.id,
          target_table_name: table,
          backfill,
          mapper_config: [
            { key: 'id', path: 'id', cast: 'int', primary_key: true },
            { key: 'name', path: 'name' },
          ],
        });
        expect(res.status).toBe(201);
        return res.body.id as string;
      };
      const parts = await subscribeWithBackfill(dmOf.parts!, 'parts_copy', true);
      const tools = await subscribeWithBackfill(dmOf.tools!, 'tools_copy', true);
      const noFlag = await subscribeWithBackfill(dmOf.parts!, 'parts_plain', false);

      // Neither the source nor the target is live: nothing is decided, nothing written yet.
      let seen = await tick();
      expect(seen[parts]).toBeUndefined();
      expect(seen[tools]).toBeUndefined();
      expect(seen[noFlag]).toBeUndefined();
      expect((await status(src.id)).status).toBe(404);
      expect(await autoDecisionOf(gw.ctx.db, parts)).toBeUndefined();
      // What a user reads on the subscription meanwhile.
      expect(await autoOf(parts)).toEqual({
        state: 'pending',
        reason: 'decided once the subscription, its data model and both of its connectors are live',
        backfill_id: null,
        decided_at: null,
      });
      expect(await autoOf(noFlag)).toBeNull();

      for (const id of [src.id, pgTarget.id])
        await gw.ctx.cluster.patchStatus('Connector', gw.ctx.config.namespace, id, { state: 'live' });
      await gw.ctx.mirror.settled();
      seen = await tick();
      expect(seen[parts]).toMatchObject({
        decision: {
          action: 'snapshot',
          reason: expect.stringMatching(/does not begin with the source's snapshot/),
        },
        runId: expect.any(String),
      });
      expect(seen[tools]?.decision).toEqual({
        action: 'skip',
        reason: "the change stream begins with the source's snapshot",
      });
      const done = await ended(src.id);
      expect(done).toMatchObject({
        id: seen[parts]!.runId,
        state: 'succeeded',
        created_by: null,
        messages_replayed: 12,
        items: [expect.objectContaining({ subscription_id: parts, target_table_name: 'parts_copy' })],
      });
      const rows = (
        await target.client.query('select id::int as id, name from public.parts_copy order by id')
      ).rows;
      expect(rows).toHaveLength(12);
      expect(rows[11]).toEqual({ id: 12, name: 'parts-12' });
      // Both decisions are recorded, and logged with their subscription.
      expect(await autoDecisionOf(gw.ctx.db, parts)).toMatchObject({
        decision: 'started',
        run_id: done.id,
      });
      expect(await autoDecisionOf(gw.ctx.db, tools)).toMatchObject({ decision: 'skipped', run_id: null });
      // And on the Subscription resources, for kubectl and Argo CD.
      expect(await statusOf(parts)).toEqual({
        state: 'started',
        reason: expect.stringMatching(/does not begin with the source's snapshot/),
        backfillId: done.id,
        decidedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      });
      expect(await statusOf(tools)).toMatchObject({
        state: 'skipped',
        reason: "the change stream begins with the source's snapshot",
      });
      const viaApi = await autoOf(parts);
      expect(viaApi).toEqual({
        state: 'started',
        reason: expect.stringMatching(/does not begin with the source's snapshot/),
        backfill_id: done.id,
        decided_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      });
      // One decision, one time: the resource and the API agree to the millisecond.
      expect((await statusOf(parts))?.decidedAt).toBe(viaApi.decided_at);
      const listed = await gw.http.get(`/api/subscriptions/?datamodel_id=${dmOf.tools}`).set(t.owner.auth);
      expect(listed.body.items).toEqual([
        expect.objectContaining({
          id: tools,
          auto_backfill: {
            state: 'skipped',
            reason: "the change stream begins with the source's snapshot",
            backfill_id: null,
            decided_at: expect.any(String),
          },
        }),
      ]);
      const logged = (text: string, sub: string) =>
        gw.recorded().logs.some((l) => l.includes(text) && l.includes(sub));
      expect(logged('Re-snapshot started for a new subscription with backfill', parts)).toBe(true);
      expect(logged('No re-snapshot for a new subscription with backfill', tools)).toBe(true);
      // tools is left to its stream: the gateway wrote nothing there.
      await expect(target.client.query('select 1 from public.tools_copy')).rejects.toThrow(/does not exist/);

      // Decided once: later ticks start nothing more, whatever the stream holds then.
      expect(await tick()).not.toHaveProperty(parts);
      expect(await tick()).not.toHaveProperty(tools);
      expect((await status(src.id)).body.id).toBe(done.id);

      // backfill turned on later (PATCH) for a consumer that has read the stream: it keeps its
      // offsets, so the gateway replays the subscription in its source's mode (a snapshot here),
      // whatever the stream begins with.
      const late = await subscribeWithBackfill(dmOf.tools!, 'tools_late', false);
      await gw.ctx.mirror.settled();
      expect(await tick()).not.toHaveProperty(late);
      await readOneAsGroup(brokers, `sluice-${late}`, `sluice.${dmOf.tools}`);
      const turnedOn = await turnOnBackfill(late);
      expect(turnedOn.body.auto_backfill).toMatchObject({
        state: 'pending',
        reason: `${LOOKING}: the gateway looks whether its consumer has read the stream yet`,
      });
      await gw.ctx.mirror.settled();
      seen = await tick();
      expect(seen[late]?.decision).toEqual({ action: 'snapshot', reason: TURNED_ON_LATER });
      const replayed = await ended(src.id);
      expect(replayed).toMatchObject({ id: seen[late]!.runId, state: 'succeeded', messages_replayed: 12 });
      expect((await target.client.query('select count(*)::int as n from public.tools_late')).rows).toEqual([
        { n: 12 },
      ]);
      expect(await autoOf(late)).toMatchObject({
        state: 'started',
        backfill_id: replayed.id,
        reason: TURNED_ON_LATER,
      });
      expect(logged('Backfill started for a subscription whose backfill was turned on', late)).toBe(true);
      expect(await statusOf(late)).toMatchObject({ state: 'started', backfillId: replayed.id });
      expect(await tick()).not.toHaveProperty(late);

      // backfill turned on before its consumer read anything (its pipeline not running yet): the
      // gateway looks at once, finds no offsets, and decides it as a new subscription once it runs,
      // even though its worker has committed offsets by then (read from the earliest offset).
      const early = await subscribeWithBackfill(dmOf.tools!, 'tools_early', false);
      const setEnabled = async (enabled: boolean) => {
        const res = await gw.http.patch(`/api/subscriptions/${early}`).set(t.owner.auth).send({ enabled });
        expect(res.status).toBe(200);
        await gw.ctx.mirror.settled();
      };
      await setEnabled(false);
      await turnOnBackfill(early);
      await gw.ctx.mirror.settled();
      expect(await tick()).not.toHaveProperty(early);
      expect(await autoOf(early)).toMatchObject({
        state: 'pending',
        reason: expect.stringMatching(
          new RegExp(`^${NOT_READ_YET}, so it reads the stream from its beginning`),
        ),
      });
      await readOneAsGroup(brokers, `sluice-${early}`, `sluice.${dmOf.tools}`);
      await setEnabled(true);
      seen = await tick();
      expect(seen[early]?.decision).toEqual({
        action: 'skip',
        reason: "the change stream begins with the source's snapshot",
      });
      expect(await autoOf(early)).toMatchObject({ state: 'skipped', backfill_id: null });
      // No second copy: the gateway wrote nothing into its table.
      await expect(target.client.query('select 1 from public.tools_early')).rejects.toThrow(/does not exist/);

      // A stream that began with the snapshot, whose beginning retention then removed (the broker's
      // DeleteRecords moves the log start as retention does): re-snapshotted too.
      await pgSource.client.query('create table public.gears (id int primary key, name text)');
      await pgSource.client.query(
        `insert into public.gears select g, 'gears-' || g from generate_series(1, 7) g`,
      );
      const src2 = await createConnector(gw, t.owner, t.teamId, `bf-auto2-${run}`, 'POSTGRES_SOURCE', {
        ...pgSource.settings,
        whitelist: ['public.gears'],
      });
      const gearsTopic = `sluice.${src2.datamodel_ids[0]}`;
      await admin.createTopics({ topics: [gearsTopic], partitions: 1, replicas: 1 });
      await producer.send({
        messages: [1, 2].map((id) => ({
          topic: gearsTopic,
          partition: 0,
          value: event(src2.datamodel_ids[0]!, 'r', true, id),
        })),
      });
      await admin.deleteRecords({
        topics: [{ name: gearsTopic, partitions: [{ partition: 0, offset: 1n }] }],
      });
      await gw.ctx.cluster.patchStatus('Connector', gw.ctx.config.namespace, src2.id, { state: 'live' });
      const gears = await subscribeWithBackfill(src2.datamodel_ids[0]!, 'gears_copy', true);
      await gw.ctx.mirror.settled();
      seen = await tick();
      expect(seen[gears]?.decision).toEqual({
        action: 'snapshot',
        reason: "retention removed the beginning of the change stream, and the source's snapshot with it",
      });
      expect(await ended(src2.id)).toMatchObject({ state: 'succeeded', messages_replayed: 7 });
      expect((await target.client.query('select count(*)::int as n from public.gears_copy')).rows).toEqual([
        { n: 7 },
      ]);
    }, 90_000);

    it("a Kafka source's subscription whose backfill is turned on later gets its retained topic replayed once live", async () => {
      const late = await subscribe(source.datamodel_ids[0]!, pgTarget.id, 'orders_late');
      for (const id of [source.id, pgTarget.id])
        await gw.ctx.cluster.patchStatus('Connector', gw.ctx.config.namespace, id, { state: 'live' });
      await gw.ctx.mirror.settled();
      expect(await tick()).not.toHaveProperty(late);
      // Its consumer has read the topic: it resumes from its offsets, past the topic's beginning.
      await readOneAsGroup(brokers, `sluice-${late}`, topic);
      const turnedOn = await turnOnBackfill(late);
      expect(turnedOn.body.auto_backfill).toMatchObject({ state: 'pending', backfill_id: null });
      await gw.ctx.mirror.settled();
      const seen = await tick();
      expect(seen[late]?.decision).toEqual({ action: 'replay', reason: TURNED_ON_LATER });
      const done = await ended(source.id);
      expect(done).toMatchObject({
        id: seen[late]!.runId,
        state: 'succeeded',
        created_by: null,
        messages_replayed: N,
        items: [expect.objectContaining({ subscription_id: late, mode: 'stream' })],
      });
      expect(await targetRows('orders_late')).toHaveLength(N);
      // Turned off and on again with kubectl (a GitOps commit each): the mirror sees the switch,
      // so the gateway replays again (upserts: still N rows).
      for (const backfill of [false, true]) {
        await gw.ctx.cluster.patch('Subscription', gw.ctx.config.namespace, late, { spec: { backfill } });
        await eventually(
          async () => (await gw.http.get(`/api/subscriptions/${late}`).set(t.owner.auth)).body,
          (b) => b.backfill === backfill,
          10_000,
        );
      }
      expect(await autoOf(late)).toMatchObject({ state: 'pending' });
      const again = (await tick())[late];
      expect(again?.runId).toEqual(expect.any(String));
      expect(again?.runId).not.toBe(done.id);
      expect((await ended(source.id)).state).toBe('succeeded');
      expect(await targetRows('orders_late')).toHaveLength(N);
    }, 90_000);

    it("a Kafka source's subscription whose backfill is turned on before its consumer read anything is left to its stream: nothing is delivered twice", async () => {
      // The usual order: created without backfill, the flag added before the pipeline runs.
      const early = await subscribe(source.datamodel_ids[0]!, pgTarget.id, 'orders_early');
      for (const id of [source.id, pgTarget.id])
        await gw.ctx.cluster.patchStatus('Connector', gw.ctx.config.namespace, id, { state: 'live' });
      await gw.ctx.mirror.settled();
      await turnOnBackfill(early);
      await gw.ctx.mirror.settled();
      // No offsets: its worker will read the retained topic from the beginning by itself.
      const seen = await tick();
      expect(seen[early]).toEqual({
        subscriptionId: early,
        decision: {
          action: 'skip',
          reason: "a KAFKA_SOURCE's retained topic is the stream the subscription reads",
        },
      });
      expect(await autoOf(early)).toMatchObject({ state: 'skipped', backfill_id: null });
      // Once its worker has read and committed, nothing is decided again.
      await readOneAsGroup(brokers, `sluice-${early}`, topic);
      expect(await tick()).not.toHaveProperty(early);
    }, 60_000);
  });
}

// Beside live delivery: a Kafka → PostgreSQL pipeline runs under the embedded
// operator (the real worker program) while a backfill replays its topic into
// the same table. The live worker keeps delivering, and the upserts of both
// leave one row per message.
describeWithKafka('a backfill beside a live pipeline (embedded operator, real worker)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const run = randomUUID().slice(0, 8);
  const topic = `bf-live-${run}`;
  let gw: TestGateway;
  let t: TeamSetup;
  let admin: Admin;
  let producer: Producer<string, string, string, string>;
  let target: ScratchDatabase;

  beforeAll(async () => {
    if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
    assertWorkerBuilt();
    gw = await startTestGateway('pglite', {
      SLUICE_EMBEDDED_OPERATOR: 'true',
      SLUICE_WORKER_COMMAND: JSON.stringify([process.execPath, WORKER_PROGRAM]),
      SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128',
    });
    t = await setupTeam(gw, 'backfills-live');
    admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
    producer = newProducer(brokers);
    await admin.createTopics({ topics: [topic], partitions: 2, replicas: 1 });
    target = await createScratchDatabase('bf_live');
  }, 120_000);
  afterAll(async () => {
    await producer?.close();
    await admin?.close();
    if (gw) await closeScanned(gw);
    await target?.drop();
  });

  const produce = (from: number, to: number) =>
    producer.send({
      messages: Array.from({ length: to - from + 1 }, (_, i) => ({
        topic,
        value: JSON.stringify({ order: { id: from + i, total: `${from + i}.5` } }),
      })),
    });
  const ids = async () =>
    (
      await target.client
        .query<{ id: number }>('select order_id::int as id from public.orders_live order by order_id')
        .catch(() => ({ rows: [] as { id: number }[] }))
    ).rows.map((r) => r.id);
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

  it('live delivery goes on during the replay; the table ends with one row per message', async () => {
    await produce(1, 30);
    const created = await gw.http
      .post('/api/pipelines/')
      .set(t.owner.auth)
      .send({
        name: `bf-live-${run}`,
        team_id: t.teamId,
        source_name: `bf-live-src-${run}`,
        source_type: 'KAFKA_SOURCE',
        source_config: { topic, bootstrap_servers: brokers.join(',') },
        target_name: `bf-live-dst-${run}`,
        target_type: 'POSTGRES_TARGET',
        target_config: { ...target.settings },
        subscription_target_table_name: 'orders_live',
        subscription_backfill: true,
        subscription_mapper_config: MAPPER,
      });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    await gw.http.post(`/api/pipelines/${id}/start`).set(t.owner.auth);
    const pipeline = await reachState(gw, t.owner, `/api/pipelines/${id}`, 'live');
    await produce(31, 40);
    expect(await eventually(ids, (r) => r.length >= 40, 60_000)).toEqual(range(1, 40));

    const started = await gw.http
      .post('/api/backfills/')
      .set(t.owner.auth)
      .send({
        source_connector_ids: [pipeline.source_connector_id],
        datamodel_ids: [],
        target_connector_ids: [pipeline.target_connector_id],
      });
    expect(started.status).toBe(202);
    expect(started.body.estimated_messages).toBe(40);
    await produce(41, 50); // while the replay runs
    const done = await eventually(
      async () =>
        (
          await gw.http
            .get(`/api/backfills/status?source_connector_id=${pipeline.source_connector_id}`)
            .set(t.owner.auth)
        ).body,
      (b) => ['succeeded', 'failed', 'cancelled'].includes(b.state),
      60_000,
    );
    expect(done).toMatchObject({ state: 'succeeded', estimated_messages: 40 });
    // The range taken at the trigger, and the tail of what arrived meanwhile.
    expect(done.messages_replayed).toBeGreaterThanOrEqual(40);
    expect(done.messages_replayed).toBeLessThanOrEqual(50);
    expect(await eventually(ids, (r) => r.length >= 50, 60_000)).toEqual(range(1, 50));
    expect((await gw.http.get(`/api/pipelines/${id}`).set(t.owner.auth)).body.state).toBe('live');
    // The live worker's consumer group still runs: a later message arrives too.
    await produce(51, 51);
    expect(await eventually(ids, (r) => r.length >= 51, 60_000)).toEqual(range(1, 51));
  }, 240_000);
});
