import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { configs, createConnector, closeScanned, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';

describe.each(databaseKinds())('data models on %s', (kind) => {
  let gw: TestGateway;
  let t: TeamSetup;
  let source: { id: string; datamodel_ids: string[] };
  let target: { id: string };
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    t = await setupTeam(gw);
    source = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'shop',
      'POSTGRES_SOURCE',
      configs.pgSource(['public.orders', 'public.items', 'public.users']),
    );
    target = await createConnector(gw, t.owner, t.teamId, 'dwh', 'POSTGRES_TARGET', configs.pgTarget());
    for (const id of source.datamodel_ids) {
      const res = await gw.http.get(`/api/datamodels/${id}`).set(t.owner.auth);
      ids.set(res.body.entry, id);
    }
  });
  afterAll(() => closeScanned(gw));
  const entries = ['public.orders', 'public.items', 'public.users'];
  const ids = new Map<string, string>();
  const dm = (i: number) => ids.get(entries[i] as string) as string;

  it('lists the data models of a connector, named {connector}_{entry}, with filters', async () => {
    const res = await gw.http.get(`/api/datamodels/?connector_id=${source.id}&size=2`).set(t.member.auth);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ total: 3, page: 1, size: 2, pages: 2 });
    expect(res.body.items.map((i: { name: string }) => i.name)).toEqual([
      'shop_public.items',
      'shop_public.orders',
    ]);
    const search = await gw.http.get('/api/datamodels/?search=USERS').set(t.owner.auth);
    expect(search.body.items.map((i: { entry: string }) => i.entry)).toEqual(['public.users']);
    expect((await gw.http.get('/api/datamodels/').set(t.outsider.auth)).body.total).toBe(0);
    expect((await gw.http.get(`/api/datamodels/${dm(0)}`).set(t.outsider.auth)).status).toBe(403);
  });

  it('shows monitoring zeros with a timestamp until a worker reports, then the reported counters', async () => {
    const before = await gw.http.get(`/api/datamodels/${dm(0)}/monitoring`).set(t.owner.auth);
    expect(before.body).toMatchObject({ messages_in: 0, messages_out: 0, errors: 0, last_event_at: null });
    expect(Date.parse(before.body.as_of)).not.toBeNaN();
    await gw.ctx.cluster.patchStatus('DataModel', gw.ctx.config.namespace, dm(0), {
      monitoring: { messagesIn: 5, messagesOut: 4, errors: 1, reportedAt: '2026-11-23T10:00:00.000Z' },
    });
    await gw.ctx.mirror.settled();
    const after = await gw.http.get(`/api/datamodels/${dm(0)}/monitoring`).set(t.owner.auth);
    expect(after.body).toMatchObject({
      messages_in: 5,
      messages_out: 4,
      errors: 1,
      reported_at: '2026-11-23T10:00:00.000Z',
    });
  });

  it('serves the schema registered under the data model name, or none', async () => {
    const none = await gw.http.get(`/api/datamodels/${dm(1)}/schema`).set(t.owner.auth);
    expect(none.body).toMatchObject({ source: 'none', fields: [] });
    const avro = JSON.stringify({
      type: 'record',
      name: 'items',
      fields: [
        { name: 'id', type: 'long' },
        { name: 'label', type: ['null', 'string'] },
      ],
    });
    const reg = await gw.http.post('/api/schemas/shop_public.items').set(t.owner.auth).send({ schema: avro });
    expect(reg.status).toBe(201);
    const res = await gw.http.get(`/api/datamodels/${dm(1)}/schema`).set(t.owner.auth);
    expect(res.body).toMatchObject({
      source: 'registry',
      version: 1,
      fields: [
        { name: 'id', type: 'long', nullable: false },
        { name: 'label', type: 'string', nullable: true },
      ],
    });
  });

  it('updates the error table with validation', async () => {
    const url = `/api/datamodels/${dm(0)}/error-table`;
    const noName = await gw.http.patch(url).set(t.owner.auth).send({ error_table_enabled: true });
    expect(noName.status).toBe(422);
    expect(noName.body.detail[0].loc).toEqual(['body', 'error_table_name']);
    const wrongTarget = await gw.http
      .patch(url)
      .set(t.owner.auth)
      .send({ error_table_enabled: true, error_table_name: 'errs', error_table_target_id: source.id });
    expect(wrongTarget.status).toBe(422);
    const ok = await gw.http
      .patch(url)
      .set(t.member.auth)
      .send({ error_table_enabled: true, error_table_name: 'errs', error_table_target_id: target.id });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      error_table_enabled: true,
      error_table_name: 'errs',
      error_table_target_id: target.id,
    });
    expect((await gw.http.patch(url).set(t.outsider.auth).send({ error_table_enabled: false })).status).toBe(
      403,
    );
  });

  it('disables and enables capture of one data model', async () => {
    const off = await gw.http.post(`/api/datamodels/${dm(2)}/disable`).set(t.owner.auth);
    expect(off.status).toBe(202);
    expect(off.body.enabled).toBe(false);
    expect((await gw.http.get('/api/datamodels/?enabled=false').set(t.owner.auth)).body.total).toBe(1);
    expect((await gw.http.post(`/api/datamodels/${dm(2)}/enable`).set(t.owner.auth)).body.enabled).toBe(true);
  });

  it('deletes a data model: its entry leaves the capture list for good; the last one stays', async () => {
    expect((await gw.http.delete(`/api/datamodels/${dm(2)}`).set(t.owner.auth)).status).toBe(204);
    const conn = await gw.http.get(`/api/connectors/${source.id}`).set(t.owner.auth);
    expect(conn.body.json_configuration.whitelist).toEqual(['public.orders', 'public.items']);
    expect([...conn.body.datamodel_ids].sort()).toEqual([dm(0), dm(1)].sort());
    expect((await gw.http.delete(`/api/datamodels/${dm(1)}`).set(t.owner.auth)).status).toBe(204);
    const last = await gw.http.delete(`/api/datamodels/${dm(0)}`).set(t.owner.auth);
    expect(last.status).toBe(409);
    expect(last.body.detail).toContain('last table');
  });
});
