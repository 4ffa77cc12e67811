import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type ConnectorResource } from '@sluice/shared/catalog';
import { configs, closeScanned, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';

// A target connector's replica count through the REST API (`replicas`,
// `spec.replicas` of the Connector); a source refuses any count but 1.

describe.each(databaseKinds())('connector replicas on %s', (kind) => {
  let gw: TestGateway;
  let t: TeamSetup;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    t = await setupTeam(gw);
  });
  afterAll(() => closeScanned(gw));

  const CONFIGS: Record<string, () => Record<string, unknown>> = {
    POSTGRES_TARGET: configs.pgTarget,
    KAFKA_TARGET: configs.kafkaTarget,
    POSTGRES_SOURCE: () => configs.pgSource(),
    KAFKA_SOURCE: () => configs.kafkaSource(),
  };
  /** POST /connectors/ of a `type` named `name`, with `replicas` when given. */
  const post = (name: string, type: string, replicas?: number) =>
    gw.http
      .post('/api/connectors/')
      .set(t.owner.auth)
      .send({
        team_id: t.teamId,
        name,
        connector_type: type,
        json_configuration: CONFIGS[type]!(),
        ...(replicas !== undefined ? { replicas } : {}),
      });
  const patch = (id: string, body: Record<string, unknown>) =>
    gw.http.patch(`/api/connectors/${id}`).set(t.owner.auth).send(body);
  const spec = async (id: string) =>
    (await gw.ctx.cluster.get<ConnectorResource>('Connector', gw.ctx.config.namespace, id))?.spec;

  it('creates a target with 3 replicas into spec.replicas and reads them back; 1 when not given', async () => {
    const res = await post('dwh-3', 'POSTGRES_TARGET', 3);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ replicas: 3, ready_replicas: 0 });
    expect((await spec(res.body.id))?.replicas).toBe(3);
    const plain = await post('dwh-1', 'KAFKA_TARGET');
    expect(plain.status).toBe(201);
    expect(plain.body.replicas).toBe(1);
    expect((await spec(plain.body.id))?.replicas).toBeUndefined();
  });

  it('scales a target with PATCH, leaving the rest of its spec as it was', async () => {
    const created = await post('dwh-scaled', 'POSTGRES_TARGET');
    const before = await spec(created.body.id);
    const res = await patch(created.body.id, { replicas: 4 });
    expect(res.status).toBe(200);
    expect(res.body.replicas).toBe(4);
    expect(await spec(created.body.id)).toEqual({ ...before, replicas: 4 });
    const back = await patch(created.body.id, { replicas: 1 });
    expect(back.body.replicas).toBe(1);
    expect((await gw.http.get(`/api/connectors/${created.body.id}`).set(t.member.auth)).body.replicas).toBe(
      1,
    );
  });

  it('refuses a source with 2 replicas with a 422 at the field saying why, and writes nothing', async () => {
    const res = await post('shop-2', 'POSTGRES_SOURCE', 2);
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({
        loc: ['body', 'replicas'],
        msg: expect.stringContaining('its replication slot has one reader'),
      }),
    ]);
    const list = await gw.http.get('/api/connectors/?search=shop-2').set(t.owner.auth);
    expect(list.body.items).toEqual([]);
    const kafka = await post('topic-2', 'KAFKA_SOURCE', 2);
    expect(kafka.status).toBe(422);
    expect(kafka.body.detail[0].loc).toEqual(['body', 'replicas']);
  });

  it('refuses to scale a source by PATCH (422), takes 1, and leaves its spec alone', async () => {
    const created = await post('shop-1', 'POSTGRES_SOURCE', 1);
    expect(created.status).toBe(201);
    expect(created.body.replicas).toBe(1);
    const before = await spec(created.body.id);
    const res = await patch(created.body.id, { replicas: 3 });
    expect(res.status).toBe(422);
    expect(res.body.detail[0]).toMatchObject({ loc: ['body', 'replicas'] });
    expect(res.body.detail[0].msg).toContain('Only target connectors take a replica count other than 1');
    expect(await spec(created.body.id)).toEqual(before);
    expect((await patch(created.body.id, { replicas: 1 })).status).toBe(200);
  });

  it.each([0, 101, 1.5])('refuses %s replicas (1 to 100) at the field', async (replicas) => {
    const res = await post(`dwh-${replicas}`, 'POSTGRES_TARGET', replicas);
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: { loc: unknown[] }) => d.loc)).toContainEqual(['body', 'replicas']);
  });
});
