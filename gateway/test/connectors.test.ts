import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { STOP_ANNOTATION, type ConnectorResource } from '@sluice/shared/catalog';
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

describe.each(databaseKinds())('connectors on %s', (kind) => {
  let gw: TestGateway;
  let t: TeamSetup;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    t = await setupTeam(gw);
  });
  afterAll(() => closeScanned(gw));

  const post = (body: Record<string, unknown>, u = t.owner) =>
    gw.http.post('/api/connectors/').set(u.auth).send(body);

  it('creates a paused connector whose capture list became data models, secrets redacted', async () => {
    const res = await post({
      name: 'shop-db',
      connector_type: 'POSTGRES_SOURCE',
      json_configuration: configs.pgSource(),
      team_id: t.teamId,
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'shop-db',
      connector_type: 'POSTGRES_SOURCE',
      direction: 'source',
      topics_config_key: 'whitelist',
      team_id: t.teamId,
      team_name: 'catalog-team',
      status: 'paused',
      desired_state: 'stopped',
    });
    expect(res.body.json_configuration.password).toBe(REDACTED);
    expect(res.body.datamodel_ids).toHaveLength(2);
    const dms = await gw.http.get(`/api/datamodels/?connector_id=${res.body.id}`).set(t.member.auth);
    expect(
      dms.body.items.map((d: { name: string; entry: string; enabled: boolean }) => [
        d.name,
        d.entry,
        d.enabled,
      ]),
    ).toEqual([
      ['shop-db_public.customers', 'public.customers', true],
      ['shop-db_public.orders', 'public.orders', true],
    ]);
    expect([...res.body.datamodel_ids].sort()).toEqual(
      dms.body.items.map((d: { id: string }) => d.id).sort(),
    );
    // The password is in the managed secret, not in the custom resource.
    const cr = await gw.ctx.cluster.get('Connector', gw.ctx.config.namespace, res.body.id);
    expect(JSON.stringify(cr)).not.toContain(SECRETS.pgSource);
    const secret = await gw.ctx.secretStore.get(gw.ctx.config.namespace, `sluice-connector-${res.body.id}`);
    expect(secret?.data.password).toBe(SECRETS.pgSource);
  });

  it('answers 409 for a duplicate name in the team and 422 for a bad configuration, writing nothing', async () => {
    const body = {
      name: 'dup',
      connector_type: 'KAFKA_SOURCE',
      json_configuration: configs.kafkaSource(),
      team_id: t.teamId,
    };
    expect((await post(body)).status).toBe(201);
    const again = await post(body);
    expect(again.status).toBe(409);
    expect(again.body.detail).toContain('dup');
    const bad = await post({ ...body, name: 'bad', json_configuration: { topic: 'x' } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toContainEqual(
      expect.objectContaining({ loc: ['body', 'json_configuration', 'bootstrap_servers'], type: 'missing' }),
    );
    const list = await gw.http.get('/api/connectors/?search=bad').set(t.owner.auth);
    expect(list.body.total).toBe(0);
  });

  it('generates the consumer group of a Kafka source and lists with filters', async () => {
    const c = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'clicks',
      'KAFKA_SOURCE',
      configs.kafkaSource('clicks'),
    );
    const read = await gw.http.get(`/api/connectors/${c.id}`).set(t.owner.auth);
    expect(read.body.json_configuration.consumer_group_id).toBe(`sluice-${c.id}`);
    const byType = await gw.http
      .get('/api/connectors/?connector_type=KAFKA_SOURCE&search=CLI')
      .set(t.owner.auth);
    expect(byType.body.items.map((i: { name: string }) => i.name)).toEqual(['clicks']);
    const sources = await gw.http.get(`/api/connectors/source-config?team_id=${t.teamId}`).set(t.member.auth);
    expect(sources.body.items.every((i: { direction: string }) => i.direction === 'source')).toBe(true);
    const one = await gw.http.get('/api/connectors/filter-one?name=clicks').set(t.member.auth);
    expect(one.body.id).toBe(c.id);
    expect((await gw.http.get('/api/connectors/filter-one?name=clicks').set(t.outsider.auth)).status).toBe(
      404,
    );
  });

  it('applies the PATCH rules: replaced whole, list never shrinks, type fixed, redacted kept', async () => {
    const c = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'inventory',
      'POSTGRES_SOURCE',
      configs.pgSource(['public.items']),
    );
    const patch = (body: Record<string, unknown>) =>
      gw.http.patch(`/api/connectors/${c.id}`).set(t.owner.auth).send(body);
    // Same destination (a new host would need the password again: secret-grants.test.ts).
    const res = await patch({
      json_configuration: {
        host: 'db.internal',
        database: 'shop2',
        user: 'cdc',
        password: REDACTED,
        whitelist: ['public.stock'],
      },
    });
    expect(res.status).toBe(200);
    expect(res.body.json_configuration.whitelist).toEqual(['public.items', 'public.stock']);
    expect(res.body.json_configuration.database).toBe('shop2');
    expect(res.body.datamodel_ids).toHaveLength(2);
    const secret = await gw.ctx.secretStore.get(gw.ctx.config.namespace, `sluice-connector-${c.id}`);
    expect(secret?.data.password).toBe(SECRETS.pgSource);
    // Rule 1: omitted keys are dropped (port had a default; ssl_mode too).
    expect(res.body.json_configuration).not.toHaveProperty('ssh_host');
    // Rule 4.
    const type = await patch({ connector_type: 'MYSQL_SOURCE' });
    expect(type.status).toBe(422);
    expect(type.body.detail[0].loc).toEqual(['body', 'connector_type']);
    // Rule 5: an empty list is refused (the kept entries would make it non-empty, so send a wrong type).
    const empty = await patch({ json_configuration: { ...configs.pgSource([]), whitelist: 'none' } });
    expect(empty.status).toBe(422);
    // Rename.
    const renamed = await patch({ name: 'inventory-db' });
    expect(renamed.body.name).toBe('inventory-db');
  });

  it('shows the worker configuration of a source and of a target, secrets as references', async () => {
    const src = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'wc-src',
      'POSTGRES_SOURCE',
      configs.pgSource(['public.a']),
    );
    const dst = await createConnector(gw, t.owner, t.teamId, 'wc-dst', 'KAFKA_TARGET', configs.kafkaTarget());
    const sub = await gw.http
      .post('/api/subscriptions/')
      .set(t.owner.auth)
      .send({ datamodel_id: src.datamodel_ids[0], target_connector_id: dst.id, target_table_name: 'a-out' });
    const source = await gw.http.get(`/api/connectors/${src.id}/source-worker-config`).set(t.member.auth);
    expect(source.body).toMatchObject({
      connector_id: src.id,
      role: 'source',
      datamodels: [
        {
          id: src.datamodel_ids[0],
          entry: 'public.a',
          enabled: true,
          topic: `sluice.${src.datamodel_ids[0]}`,
        },
      ],
    });
    expect(source.body.configuration.password).toEqual({
      valueFrom: { secretKeyRef: { name: `sluice-connector-${src.id}`, key: 'password' } },
    });
    const target = await gw.http.get(`/api/connectors/${dst.id}/target-worker-config`).set(t.member.auth);
    expect(target.body.subscriptions).toEqual([
      expect.objectContaining({
        id: sub.body.id,
        topic: `sluice.${src.datamodel_ids[0]}`,
        target_table_name: 'a-out',
      }),
    ]);
    // A target has no source worker: the resource the path names does not exist.
    expect(
      (await gw.http.get(`/api/connectors/${dst.id}/source-worker-config`).set(t.owner.auth)).status,
    ).toBe(404);
  });

  it('refuses an empty CDC table list at creation with a 422', async () => {
    const res = await post({
      name: 'empty',
      connector_type: 'POSTGRES_SOURCE',
      json_configuration: configs.pgSource([]),
      team_id: t.teamId,
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'json_configuration', 'whitelist']);
  });

  it('refuses a valueFrom reference to a missing secret, accepts an existing one', async () => {
    const ref = (name: string, key: string) => ({ valueFrom: { secretKeyRef: { name, key } } });
    const body = (password: unknown) => ({
      name: `refs-${Math.random().toString(36).slice(2, 7)}`,
      connector_type: 'POSTGRES_TARGET',
      json_configuration: { ...configs.pgTarget(), password },
      team_id: t.teamId,
    });
    const missing = await post(body(ref('nope', 'password')));
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0].loc).toEqual(['body', 'json_configuration', 'password']);
    await gw.ctx.secretStore.put(
      gw.ctx.config.namespace,
      'dwh-creds',
      { password: 'x' },
      { annotations: { 'sluice.dev/allowed-teams': t.teamId } },
    );
    const ok = await post(body(ref('dwh-creds', 'password')));
    expect(ok.status).toBe(201);
    expect(ok.body.json_configuration.password).toEqual(ref('dwh-creds', 'password'));
  });

  it("refuses a reference to another object's managed secret (its worker would receive that object's values)", async () => {
    const other = await post({
      name: `victim-${Math.random().toString(36).slice(2, 7)}`,
      connector_type: 'POSTGRES_TARGET',
      json_configuration: { ...configs.pgTarget(), password: 'victims-password' },
      team_id: t.teamId,
    });
    expect(other.status).toBe(201);
    const stolen = {
      valueFrom: { secretKeyRef: { name: `sluice-connector-${other.body.id}`, key: 'password' } },
    };
    const res = await post({
      name: `thief-${Math.random().toString(36).slice(2, 7)}`,
      connector_type: 'POSTGRES_TARGET',
      json_configuration: { ...configs.pgTarget(), password: stolen },
      team_id: t.teamId,
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'json_configuration', 'password']);
    expect(res.body.detail[0].msg).toContain('not granted to this team');
  });

  it('moves through start and stop by the table of spec 3.2', async () => {
    const c = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'runner',
      'KAFKA_SOURCE',
      configs.kafkaSource('runs'),
    );
    const stop = await gw.http.post(`/api/connectors/${c.id}/stop`).set(t.owner.auth);
    expect(stop.status).toBe(409);
    expect(stop.body.detail).toContain('paused');
    const start = await gw.http.post(`/api/connectors/${c.id}/start`).set(t.member.auth);
    expect(start.status).toBe(202);
    expect(start.body).toBe('BUILDING');
    const read = await gw.http.get(`/api/connectors/${c.id}`).set(t.owner.auth);
    expect(read.body).toMatchObject({ status: 'building', desired_state: 'running' });
    expect((await gw.http.post(`/api/connectors/${c.id}/stop`).set(t.owner.auth)).body).toBe('STOPPING');
    // The stop is the latest word (a pipeline started before it does not run it again): the read says so.
    const stopped = await gw.http.get(`/api/connectors/${c.id}`).set(t.owner.auth);
    expect(stopped.body).toMatchObject({
      status: 'stopping',
      desired_state: 'stopped',
      desired_state_reason: 'Its desiredState is stopped',
    });
    const o = await gw.ctx.cluster.get<ConnectorResource>('Connector', gw.ctx.config.namespace, c.id);
    expect(Date.parse(o?.metadata.annotations?.[STOP_ANNOTATION] ?? '')).toBeGreaterThan(Date.now() - 60_000);
  });

  it('keeps outsiders out: 403 on reads and writes, invisible in lists', async () => {
    const c = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'private',
      'KAFKA_SOURCE',
      configs.kafkaSource('p'),
    );
    expect((await gw.http.get(`/api/connectors/${c.id}`).set(t.outsider.auth)).status).toBe(403);
    expect(
      (await gw.http.patch(`/api/connectors/${c.id}`).set(t.outsider.auth).send({ name: 'x' })).status,
    ).toBe(403);
    expect((await gw.http.delete(`/api/connectors/${c.id}`).set(t.stranger.auth)).status).toBe(403);
    const list = await gw.http.get('/api/connectors/').set(t.outsider.auth);
    expect(list.body.items).toEqual([]);
    expect(
      (
        await post(
          {
            name: 'x',
            connector_type: 'KAFKA_SOURCE',
            json_configuration: configs.kafkaSource(),
            team_id: t.teamId,
          },
          t.outsider,
        )
      ).status,
    ).toBe(403);
  });

  it('deletes a connector with its data models and secret', async () => {
    const c = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'gone',
      'POSTGRES_SOURCE',
      configs.pgSource(['public.a']),
    );
    expect((await gw.http.delete(`/api/connectors/${c.id}`).set(t.owner.auth)).status).toBe(204);
    expect((await gw.http.get(`/api/connectors/${c.id}`).set(t.owner.auth)).status).toBe(404);
    expect((await gw.http.get(`/api/datamodels/${c.datamodel_ids[0]}`).set(t.owner.auth)).status).toBe(404);
    expect(await gw.ctx.secretStore.get(gw.ctx.config.namespace, `sluice-connector-${c.id}`)).toBeUndefined();
  });

  it('replays a create with the same Idempotency-Key', async () => {
    const body = {
      name: 'idem',
      connector_type: 'KAFKA_SOURCE',
      json_configuration: configs.kafkaSource('i'),
      team_id: t.teamId,
    };
    const first = await gw.http
      .post('/api/connectors/')
      .set(t.owner.auth)
      .set('Idempotency-Key', 'k-1')
      .send(body);
    const second = await gw.http
      .post('/api/connectors/')
      .set(t.owner.auth)
      .set('Idempotency-Key', 'k-1')
      .send(body);
    expect(second.status).toBe(201);
    expect(second.body.id).toBe(first.body.id);
  });
});
