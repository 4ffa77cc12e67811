import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
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

describe.each(databaseKinds())('subscriptions on %s', (kind) => {
  let gw: TestGateway;
  let t: TeamSetup;
  let dms: string[];
  let pg: { id: string };
  let kafka: { id: string };
  const rules = [
    { key: 'id', path: 'id', cast: 'int', primary_key: true },
    { key: 'email', path: 'email', encrypt_method: 'aes-256-gcm', encrypt_key: SECRETS.mapperKey },
  ];
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    t = await setupTeam(gw);
    const source = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'crm',
      'POSTGRES_SOURCE',
      configs.pgSource(['public.users', 'public.deals']),
    );
    dms = source.datamodel_ids;
    pg = await createConnector(gw, t.owner, t.teamId, 'warehouse', 'POSTGRES_TARGET', configs.pgTarget());
    kafka = await createConnector(gw, t.owner, t.teamId, 'bus', 'KAFKA_TARGET', configs.kafkaTarget());
  });
  afterAll(() => closeScanned(gw));
  const post = (body: Record<string, unknown>, u = t.owner) =>
    gw.http.post('/api/subscriptions/').set(u.auth).send(body);

  it('creates a subscription with defaults, the passphrase in the secret store and redacted on reads', async () => {
    const res = await post({ datamodel_id: dms[0], target_connector_id: pg.id, mapper_config: rules });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      datamodel_id: dms[0],
      target_connector_id: pg.id,
      team_id: t.teamId,
      enabled: true,
      backfill: false,
    });
    expect(res.body.consumer_id).toBe(`sluice-${res.body.id}`);
    expect(['users', 'deals']).toContain(res.body.target_table_name);
    expect(res.body.mapper_config[1].encrypt_key).toBe(REDACTED);
    const cr = await gw.ctx.cluster.get('Subscription', gw.ctx.config.namespace, res.body.id);
    expect(JSON.stringify(cr)).not.toContain(SECRETS.mapperKey);
    const secret = await gw.ctx.secretStore.get(
      gw.ctx.config.namespace,
      `sluice-subscription-${res.body.id}`,
    );
    expect(Object.values(secret?.data ?? {})).toEqual([SECRETS.mapperKey]);
    // <redacted> sent back keeps the passphrase.
    const patched = await gw.http
      .patch(`/api/subscriptions/${res.body.id}`)
      .set(t.member.auth)
      .send({ smt_config: [rules[0], { ...rules[1], encrypt_key: REDACTED }], target_table_name: 'people' });
    expect(patched.status).toBe(200);
    expect(patched.body.target_table_name).toBe('people');
    const after = await gw.ctx.secretStore.get(gw.ctx.config.namespace, `sluice-subscription-${res.body.id}`);
    expect(Object.values(after?.data ?? {})).toEqual([SECRETS.mapperKey]);
  });

  it('validates the mapper with located issues, rule 13 for table targets, and the ends', async () => {
    const bad = await post({
      datamodel_id: dms[0],
      target_connector_id: pg.id,
      mapper_config: [{ key: 'a', cast: 'nope' }],
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc.slice(0, 3)).toEqual(['body', 'mapper_config', 0]);
    const noPk = await post({
      datamodel_id: dms[0],
      target_connector_id: pg.id,
      mapper_config: [{ key: 'a', path: 'a' }],
    });
    expect(noPk.status).toBe(422);
    expect(noPk.body.detail[0].msg).toContain('primary_key');
    // A broker target takes documents: no primary key needed.
    expect(
      (
        await post({
          datamodel_id: dms[0],
          target_connector_id: kafka.id,
          mapper_config: [{ key: 'a', path: 'a' }],
        })
      ).status,
    ).toBe(201);
    const notTarget = await post({ datamodel_id: dms[0], target_connector_id: dms[1] });
    expect(notTarget.status).toBe(422);
    expect(notTarget.body.detail[0].loc).toEqual(['body', 'target_connector_id']);
    const both = await post({
      datamodel_id: dms[0],
      target_connector_id: kafka.id,
      mapper_config: [],
      smt_config: [{ key: 'x', path: 'x' }],
    });
    expect(both.status).toBe(422);
    // Another name of the same field: not both, even when equal (the document says `not` both).
    const same = await post({
      datamodel_id: dms[0],
      target_connector_id: kafka.id,
      mapper_config: [],
      smt_config: [],
    });
    expect(same.status).toBe(422);
    expect(same.body.detail[0].loc).toEqual(['body', 'smt_config']);
    expect((await post({ datamodel_id: dms[0], target_connector_id: kafka.id }, t.outsider)).status).toBe(
      403,
    );
  });

  it('subscribes several data models to several targets at once, or nothing', async () => {
    const count = async () =>
      (await gw.http.get(`/api/subscriptions/?target_connector_id=${kafka.id}`).set(t.member.auth)).body
        .total;
    const before = await count();
    const bad = await gw.http
      .post('/api/subscriptions/subscribe-all')
      .set(t.owner.auth)
      .send({ datamodel_ids: dms, target_connector_ids: [kafka.id, dms[0]] });
    expect(bad.status).toBe(422);
    // The issue is located at the list entry, with its own message.
    expect(bad.body.detail).toContainEqual({
      loc: ['body', 'target_connector_ids', 1],
      msg: 'No such connector',
      type: 'value_error',
    });
    expect(await count()).toBe(before);
    const res = await gw.http
      .post('/api/subscriptions/subscribe-all')
      .set(t.owner.auth)
      .send({ datamodel_ids: dms, target_connector_ids: [kafka.id] });
    expect(res.status).toBe(201);
    expect(res.body).toHaveLength(2);
    expect(await count()).toBe(before + 2);
  });

  it('pauses and starts; start refuses a table target without a primary key', async () => {
    const s = (await post({ datamodel_id: dms[1], target_connector_id: pg.id })).body;
    const paused = await gw.http.post(`/api/subscriptions/${s.id}/pause`).set(t.owner.auth);
    expect(paused.status).toBe(202);
    expect(paused.body.enabled).toBe(false);
    const start = await gw.http.post(`/api/subscriptions/${s.id}/start`).set(t.owner.auth);
    expect(start.status).toBe(409);
    await gw.http
      .patch(`/api/subscriptions/${s.id}`)
      .set(t.owner.auth)
      .send({ mapper_config: [rules[0]] });
    expect((await gw.http.post(`/api/subscriptions/${s.id}/start`).set(t.owner.auth)).body.enabled).toBe(
      true,
    );
  });

  it('deletes a subscription and its secret; a used connector cannot be deleted meanwhile', async () => {
    const s = (await post({ datamodel_id: dms[1], target_connector_id: kafka.id, mapper_config: rules }))
      .body;
    const del = await gw.http.delete(`/api/connectors/${kafka.id}`).set(t.owner.auth);
    expect(del.status).toBe(409);
    expect(del.body.detail).toContain('subscription');
    expect((await gw.http.delete(`/api/subscriptions/${s.id}`).set(t.outsider.auth)).status).toBe(403);
    expect((await gw.http.delete(`/api/subscriptions/${s.id}`).set(t.owner.auth)).status).toBe(204);
    expect((await gw.http.get(`/api/subscriptions/${s.id}`).set(t.owner.auth)).status).toBe(404);
    expect(
      await gw.ctx.secretStore.get(gw.ctx.config.namespace, `sluice-subscription-${s.id}`),
    ).toBeUndefined();
  });
});
