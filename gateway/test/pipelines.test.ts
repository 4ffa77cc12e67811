import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { STOP_ANNOTATION, type PipelineResource } from '@sluice/shared/catalog';
import { REDACTED } from '@sluice/shared/schemas';
import {
  configs,
  createConnector,
  closeScanned,
  SECRETS,
  setupTeam,
  type TeamSetup,
} from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';

const pkRules = [
  { key: 'id', path: 'id', cast: 'int', primary_key: true },
  { key: 'total', path: 'amount.total', cast: 'float' },
];

describe.each(databaseKinds())('pipelines on %s', (kind) => {
  let gw: TestGateway;
  let t: TeamSetup;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    t = await setupTeam(gw);
  });
  afterAll(() => closeScanned(gw));

  const flat = (name: string, extra: Record<string, unknown> = {}) => ({
    name,
    team_id: t.teamId,
    source_name: `${name}-src`,
    source_type: 'KAFKA_SOURCE',
    source_config: configs.kafkaSource(`${name}-topic`),
    target_name: `${name}-dst`,
    target_type: 'POSTGRES_TARGET',
    target_config: configs.pgTarget(),
    subscription_target_table_name: 'orders',
    subscription_mapper_config: pkRules,
    ...extra,
  });
  const create = (body: Record<string, unknown>, u = t.owner) =>
    gw.http.post('/api/pipelines/').set(u.auth).send(body);
  const counts = async () => {
    const [c, d, s] = await Promise.all(
      ['connectors', 'datamodels', 'subscriptions'].map((k) => gw.http.get(`/api/${k}/`).set(t.owner.auth)),
    );
    return [c!.body.total, d!.body.total, s!.body.total];
  };

  it('creates a flattened pipeline: draft, version 1, new connectors, data model and subscription', async () => {
    const res = await create(flat('orders'));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'orders',
      state: 'draft',
      version: 1,
      team_id: t.teamId,
      team_name: 'catalog-team',
      existing_source_id: null,
      source_name: 'orders-src',
      source_type: 'KAFKA_SOURCE',
      target_type: 'POSTGRES_TARGET',
      subscription_target_table_name: 'orders',
      subscription_backfill: false,
      subscription_mapper_config: pkRules,
      datamodel_source_topic: 'orders-topic',
    });
    expect(res.body.target_config.password).toBe(REDACTED);
    expect(res.body.subscription_consumer_id).toBe(`sluice-${res.body.subscription_id}`);
    expect(res.body.json_configuration).toMatchObject({ source_name: 'orders-src', smt_config: pkRules });
    expect(Date.parse(res.body.created_at)).not.toBeNaN();
    const dm = await gw.http.get(`/api/datamodels/${res.body.datamodel_id}`).set(t.owner.auth);
    expect(dm.body.name).toBe('orders-src_orders-topic');
  });

  it('creates the nested shape and reads it back with both shapes', async () => {
    const res = await create({
      name: 'nested_1',
      team_id: t.teamId,
      state: 'draft',
      json_configuration: {
        source_name: 'n-src',
        source_type: 'KAFKA_SOURCE',
        source_config: configs.kafkaSource('n'),
        target_name: 'n-dst',
        target_type: 'KAFKA_TARGET',
        target_config: configs.kafkaTarget(),
        smt_name: 'flatten',
        smt_config: [{ key: 'v', path: 'v' }],
        draft_step: 'mapping',
      },
    });
    expect(res.status).toBe(201);
    expect(res.body.json_configuration).toMatchObject({
      smt_name: 'flatten',
      draft_step: 'mapping',
      target_type: 'KAFKA_TARGET',
    });
    expect(res.body.json_configuration.target_config.sasl_password).toBe(REDACTED);
    const nestedBody = {
      name: 'nested_2',
      team_id: t.teamId,
      state: 'live',
      json_configuration: {
        source_name: 'n2-src',
        source_type: 'KAFKA_SOURCE',
        source_config: configs.kafkaSource('n2'),
        target_name: 'n2-dst',
        target_type: 'KAFKA_TARGET',
        target_config: configs.kafkaTarget(),
      },
    };
    const live = await create(nestedBody);
    expect(live.status).toBe(422);
    expect(live.body.detail[0].loc).toEqual(['body', 'state']);
    const mixed = await create({
      ...nestedBody,
      state: 'draft',
      existing_source_id: res.body.source_connector_id,
    });
    expect(mixed.status).toBe(422);
    expect(mixed.body.detail[0].loc).toEqual(['body', 'existing_source_id']);
  });

  it('enforces name rules, uniqueness and the either-or of each side, leaving nothing behind', async () => {
    const before = await counts();
    for (const name of ['has space', 'dot.name', '', 'x'.repeat(256)]) {
      const res = await create(flat(name));
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc).toEqual(['body', 'name']);
    }
    expect((await create(flat('orders'))).status).toBe(409);
    const existing = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'shared-src',
      'KAFKA_SOURCE',
      configs.kafkaSource('shared'),
    );
    const both = await create(flat('both', { existing_source_id: existing.id }));
    expect(both.status).toBe(422);
    expect(both.body.detail[0].loc).toEqual(['body', 'existing_source_id']);
    const neither = await create({ name: 'neither', team_id: t.teamId, existing_target_id: existing.id });
    expect(neither.status).toBe(422);
    // A failure late in the plan (bad mapper) leaves no connector or data model behind.
    const badMapper = await create(flat('late', { subscription_mapper_config: [{ key: 'a', path: 'a' }] }));
    expect(badMapper.status).toBe(422);
    expect(badMapper.body.detail[0].loc[1]).toBe('subscription_mapper_config');
    const badConfig = await create(flat('late2', { target_config: { host: 'x' } }));
    expect(badConfig.status).toBe(422);
    expect(badConfig.body.detail[0].loc.slice(0, 2)).toEqual(['body', 'target_config']);
    const after = await counts();
    expect(after).toEqual([before[0] + 1, before[1] + 1, before[2]]);
  });

  it('undoes the objects already written when a later write fails', async () => {
    const before = await counts();
    const cluster = gw.ctx.cluster;
    const original = cluster.create.bind(cluster);
    // The pipeline object itself fails to be written, after its connectors and subscription were.
    cluster.create = (async (o: { kind: string }) => {
      if (o.kind === 'Pipeline') throw new Error('API server unavailable');
      return original(o as never);
    }) as typeof cluster.create;
    try {
      const res = await create(flat('doomed'));
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ detail: 'Internal Server Error' });
    } finally {
      cluster.create = original;
    }
    expect(await counts()).toEqual(before);
  });

  it('mixes an existing source with a new target, and lists PipelineList elements', async () => {
    const src = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'pg-shop',
      'POSTGRES_SOURCE',
      configs.pgSource(['public.orders', 'public.items']),
    );
    const res = await create({
      name: 'mixed',
      team_id: t.teamId,
      existing_source_id: src.id,
      datamodel_source_topic: 'public.items',
      target_name: 'mixed-bus',
      target_type: 'KAFKA_TARGET',
      target_config: configs.kafkaTarget(),
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      existing_source_id: src.id,
      source_name: 'pg-shop',
      datamodel_source_topic: 'public.items',
    });
    const list = await gw.http.get(`/api/pipelines/?search=MIX&team_id=${t.teamId}`).set(t.member.auth);
    expect(list.body.items).toEqual([
      {
        id: res.body.id,
        name: 'mixed',
        state: 'draft',
        owner: 'catalog-team',
        source_name: 'pg-shop',
        source_type: 'POSTGRES_SOURCE',
        target_name: 'mixed-bus',
        target_type: 'KAFKA_TARGET',
        transform: 0,
      },
    ]);
    expect((await gw.http.get('/api/pipelines/').set(t.outsider.auth)).body.total).toBe(0);
    expect((await gw.http.get('/api/pipelines/filter-one?name=mixed').set(t.member.auth)).body.id).toBe(
      res.body.id,
    );
  });

  it('follows the state table: start 202 BUILDING, pause from live only, 409 naming the state', async () => {
    const p = (await create(flat('runner'))).body;
    const pause = await gw.http.post(`/api/pipelines/${p.id}/pause`).set(t.owner.auth);
    expect(pause.status).toBe(409);
    expect(pause.body.detail).toContain('draft');
    const start = await gw.http.post(`/api/pipelines/${p.id}/start`).set(t.member.auth);
    expect(start.status).toBe(202);
    expect(start.body).toBe('BUILDING');
    expect((await gw.http.post(`/api/pipelines/${p.id}/start`).set(t.owner.auth)).status).toBe(409);
    // The operator moves building → live when the workers converge; here the test plays it.
    await gw.ctx.cluster.patchStatus('Pipeline', gw.ctx.config.namespace, p.id, { state: 'live' });
    await gw.ctx.mirror.settled();
    const paused = await gw.http.post(`/api/pipelines/${p.id}/pause`).set(t.owner.auth);
    expect(paused.body).toBe('PAUSED');
    const count = await gw.http.get(`/api/pipelines/count-status?team_id=${t.teamId}`).set(t.owner.auth);
    expect(count.body.paused).toBe(1);
    expect(count.body.all).toBe(
      count.body.draft + count.body.building + count.body.live + count.body.paused + count.body.error,
    );
    const nonDraft = await gw.http.get('/api/pipelines/status/all-non-draft').set(t.owner.auth);
    expect(nonDraft.body.items.map((i: { name: string }) => i.name)).toEqual(['runner']);
    const status = await gw.http.get(`/api/pipelines/${p.id}/status`).set(t.owner.auth);
    expect(status.headers.deprecation).toBeDefined();
    expect(status.body).toMatchObject({ id: p.id, state: 'paused', version: 1 });
  });

  it('pauses a pipeline in error (it stops retrying): 202 PAUSED, the time of the pause on the object', async () => {
    const p = (await create(flat('erring'))).body;
    expect((await gw.http.post(`/api/pipelines/${p.id}/start`).set(t.owner.auth)).status).toBe(202);
    // The operator puts a pipeline whose worker keeps failing in error; here the test plays it.
    await gw.ctx.cluster.patchStatus('Pipeline', gw.ctx.config.namespace, p.id, { state: 'error' });
    await gw.ctx.mirror.settled();
    const pause = await gw.http.post(`/api/pipelines/${p.id}/pause`).set(t.owner.auth);
    expect([pause.status, pause.body]).toEqual([202, 'PAUSED']);
    expect((await gw.http.get(`/api/pipelines/${p.id}`).set(t.owner.auth)).body.state).toBe('paused');
    const o = await gw.ctx.cluster.get<PipelineResource>('Pipeline', gw.ctx.config.namespace, p.id);
    expect(o?.spec.desiredState).toBe('paused');
    expect(Date.parse(o?.metadata.annotations?.[STOP_ANNOTATION] ?? '')).toBeGreaterThan(Date.now() - 60_000);
  });

  it('refuses to start a table target without a primary-key rule', async () => {
    const p = (await create(flat('nopk', { subscription_mapper_config: [] }))).body;
    const res = await gw.http.post(`/api/pipelines/${p.id}/start`).set(t.owner.auth);
    expect(res.status).toBe(409);
    expect(res.body.detail).toContain('primary-key');
  });

  it('updates by the patterns of 4.4, adding 1 to version each time', async () => {
    const p = (await create(flat('evolving'))).body;
    const patch = (body: Record<string, unknown>) =>
      gw.http.patch(`/api/pipelines/${p.id}`).set(t.owner.auth).send(body);
    const renamed = await patch({ name: 'evolved' });
    expect(renamed.body).toMatchObject({ name: 'evolved', version: 2 });
    expect((await patch({})).body.version).toBe(2);
    const sub = await patch({ subscription_target_table_name: 'orders_v2', subscription_backfill: true });
    expect(sub.body).toMatchObject({
      subscription_target_table_name: 'orders_v2',
      subscription_backfill: true,
      version: 3,
    });
    // Turned on after creation: its subscription's past is replayed once the pipeline is live.
    const { subscription_id } = await gw.ctx.db
      .selectFrom('mirror_pipelines')
      .select('subscription_id')
      .where('id', '=', p.id)
      .executeTakeFirstOrThrow();
    const subscription = await gw.http.get(`/api/subscriptions/${subscription_id}`).set(t.owner.auth);
    expect(subscription.body.auto_backfill).toMatchObject({
      state: 'pending',
      reason: expect.stringMatching(/^backfill was turned on after the subscription's creation/),
    });
    // Switch the target to an existing connector: the pipeline's own target goes away.
    const other = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'other-dwh',
      'POSTGRES_TARGET',
      configs.pgTarget(),
    );
    const switched = await patch({
      existing_target_id: other.id,
      target_name: null,
      target_type: null,
      target_config: null,
    });
    expect(switched.status).toBe(200);
    expect(switched.body).toMatchObject({
      existing_target_id: other.id,
      target_name: 'other-dwh',
      version: 4,
    });
    expect((await gw.http.get(`/api/connectors/${p.target_connector_id}`).set(t.owner.auth)).status).toBe(
      404,
    );
    const subRead = await gw.http.get(`/api/subscriptions/${p.subscription_id}`).set(t.owner.auth);
    expect(subRead.body.target_connector_id).toBe(other.id);
    // Change the pipeline's own source configuration; <redacted> semantics apply.
    const cfg = await patch({
      source_config: { ...configs.kafkaSource('evolving-topic'), bootstrap_servers: 'kafka-9:9092' },
    });
    expect(cfg.body.source_config.bootstrap_servers).toBe('kafka-9:9092');
    expect(cfg.body.version).toBe(5);
    expect((await patch({ team_id: t.envId })).status).toBe(422);
  });

  it('exports the configuration with secrets redacted and imports it as the next version', async () => {
    const p = (await create(flat('exported'))).body;
    const exp = await gw.http.get(`/api/pipelines/${p.id}/configuration`).set(t.owner.auth);
    expect(exp.status).toBe(200);
    expect(exp.body.target_config.password).toBe(REDACTED);
    expect(JSON.stringify(exp.body)).not.toContain(SECRETS.pgTarget);
    const stale = await gw.http
      .post(`/api/pipelines/${p.id}/configuration`)
      .set(t.owner.auth)
      .send({ ...exp.body, version: 7 });
    expect(stale.status).toBe(409);
    const imported = await gw.http
      .post(`/api/pipelines/${p.id}/configuration`)
      .set(t.owner.auth)
      .send({ ...exp.body, subscription_target_table_name: 'imported' });
    expect(imported.status).toBe(200);
    expect(imported.body).toMatchObject({ version: 2, subscription_target_table_name: 'imported' });
    const secret = await gw.ctx.secretStore.get(
      gw.ctx.config.namespace,
      `sluice-connector-${p.target_connector_id}`,
    );
    expect(secret?.data.password).toBe(SECRETS.pgTarget);
  });

  it('shows worker configuration with references and empty latency until workers report', async () => {
    const p = (await create(flat('observed'))).body;
    const wc = await gw.http.get(`/api/pipelines/${p.id}/worker-config`).set(t.owner.auth);
    expect(wc.status).toBe(200);
    expect(wc.body.source.datamodels[0].topic).toBe('observed-topic');
    expect(wc.body.target.subscriptions[0]).toMatchObject({
      target_table_name: 'orders',
      topic: 'observed-topic',
    });
    expect(JSON.stringify(wc.body)).not.toContain(SECRETS.pgTarget);
    const lat = await gw.http.get(`/api/pipelines/${p.id}/latency-informations`).set(t.owner.auth);
    expect(lat.body).toEqual({
      pipeline_id: p.id,
      p50_ms: null,
      p95_ms: null,
      p99_ms: null,
      samples: 0,
      last_event_at: null,
      messages_in: 0,
      messages_out: 0,
      errors: 0,
      retained_wal_bytes: null,
      retained_wal_measured_at: null,
      // A Kafka source: no binary log figures (a MySQL or MariaDB source's).
      binlog: null,
      reported_at: null,
    });
  });

  it('deletes a pipeline with what it created, and keeps connectors it only used', async () => {
    const shared = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'kept-src',
      'KAFKA_SOURCE',
      configs.kafkaSource('kept'),
    );
    const p = (
      await create(
        flat('temporary', {
          existing_source_id: shared.id,
          source_name: undefined,
          source_type: undefined,
          source_config: undefined,
        }),
      )
    ).body;
    expect((await gw.http.delete(`/api/connectors/${shared.id}`).set(t.owner.auth)).status).toBe(409);
    expect((await gw.http.delete(`/api/pipelines/${p.id}`).set(t.outsider.auth)).status).toBe(403);
    expect((await gw.http.delete(`/api/pipelines/${p.id}`).set(t.owner.auth)).status).toBe(204);
    expect((await gw.http.get(`/api/pipelines/${p.id}`).set(t.owner.auth)).status).toBe(404);
    expect((await gw.http.get(`/api/connectors/${p.target_connector_id}`).set(t.owner.auth)).status).toBe(
      404,
    );
    expect((await gw.http.get(`/api/subscriptions/${p.subscription_id}`).set(t.owner.auth)).status).toBe(404);
    expect((await gw.http.get(`/api/connectors/${shared.id}`).set(t.owner.auth)).status).toBe(200);
  });
});
