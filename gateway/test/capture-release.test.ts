import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { cdcNames } from '@sluice/shared/connectors';
import { createScratchDatabase, describeWithPostgres, type ScratchDatabase } from '@sluice/testing/postgres';
import { closeScanned, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { startTestGateway, type TestGateway } from './harness.js';

// Deleting a PostgreSQL source through the API drops its replication slot on
// the source database (a slot nobody reads keeps WAL for ever); a source that
// cannot be reached does not block the delete.

describeWithPostgres('deleting a PostgreSQL source releases its replication slot', () => {
  let gw: TestGateway;
  let t: TeamSetup;
  let source: ScratchDatabase;

  beforeAll(async () => {
    source = await createScratchDatabase('release');
    await source.client.query('create table public.orders (id int primary key)');
    gw = await startTestGateway('pglite', { SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128' });
    t = await setupTeam(gw, 'release');
  });
  afterAll(async () => {
    await closeScanned(gw);
    await source.drop();
  });

  const create = (name: string, host: string) => createSource(gw, t, source, name, host);
  const slots = async () =>
    (await source.client.query<{ slot_name: string }>('select slot_name from pg_replication_slots')).rows.map(
      (r) => r.slot_name,
    );

  it('drops the slot of the deleted connector and only that one', async () => {
    const mine = await create('orders-cdc', source.settings.host);
    const other = await create('other-cdc', source.settings.host);
    expect([mine.status, other.status]).toEqual([201, 201]);
    // The slots the capture would hold (created here: no worker runs in this test).
    for (const id of [mine.body.id as string, other.body.id as string]) {
      await source.client.query(`select pg_create_logical_replication_slot($1, 'pgoutput')`, [
        cdcNames(id).slot,
      ]);
    }
    const del = await gw.http.delete(`/api/connectors/${mine.body.id as string}`).set(t.owner.auth);
    expect(del.status).toBe(204);
    expect(await slots()).not.toContain(cdcNames(mine.body.id as string).slot);
    expect(await slots()).toContain(cdcNames(other.body.id as string).slot);
    await source.client.query('select pg_drop_replication_slot($1)', [
      cdcNames(other.body.id as string).slot,
    ]);
  });

  it('still deletes a connector whose source cannot be reached', async () => {
    const gone = await create('unreachable-cdc', '169.254.169.254');
    expect(gone.status).toBe(201);
    const del = await gw.http.delete(`/api/connectors/${gone.body.id as string}`).set(t.owner.auth);
    expect(del.status).toBe(204);
    expect((await gw.http.get(`/api/connectors/${gone.body.id as string}`).set(t.owner.auth)).status).toBe(
      404,
    );
  });
});

// Deleted with kubectl (here: straight through the cluster port, as kubectl
// would): the operator's finalizer holds the connector and its Secret while
// the gateway, seeing the deletion through its mirror, drops the slot and
// records it; then the connector goes. An unreachable source lets it go too,
// at once, with the outcome recorded — never a connector stuck in deletion.
describeWithPostgres('a PostgreSQL source deleted with kubectl: the gateway drops its slot', () => {
  let gw: TestGateway;
  let t: TeamSetup;
  let source: ScratchDatabase;

  beforeAll(async () => {
    source = await createScratchDatabase('release_kubectl');
    await source.client.query('create table public.orders (id int primary key)');
    gw = await startTestGateway('pglite', {
      SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128',
      SLUICE_EMBEDDED_OPERATOR: 'true',
    });
    t = await setupTeam(gw, 'release-kubectl');
  });
  afterAll(async () => {
    await closeScanned(gw);
    await source.drop();
  });

  const ns = () => gw.ctx.config.namespace;
  const create = async (name: string, host: string) => {
    const res = await createSource(gw, t, source, name, host);
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    // The operator's finalizer is on before the delete, as for any connector it has seen.
    await until(
      async () => ((await gw.ctx.cluster.get('Connector', ns(), id))?.metadata.finalizers ?? []).length > 0,
    );
    return id;
  };
  const gone = (id: string) =>
    until(async () => (await gw.ctx.cluster.get('Connector', ns(), id)) === undefined);

  it('drops the slot, then the connector goes', async () => {
    const id = await create('kubectl-cdc', source.settings.host);
    await source.client.query(`select pg_create_logical_replication_slot($1, 'pgoutput')`, [
      cdcNames(id).slot,
    ]);
    await gw.ctx.cluster.delete('Connector', ns(), id);
    await gone(id);
    const left = await source.client.query('select 1 from pg_replication_slots where slot_name = $1', [
      cdcNames(id).slot,
    ]);
    expect(left.rowCount).toBe(0);
  }, 60_000);

  it('an unreachable source does not hold the deletion', async () => {
    const id = await create('kubectl-unreachable', '169.254.169.254');
    const started = Date.now();
    await gw.ctx.cluster.delete('Connector', ns(), id);
    await gone(id);
    // Well under the operator's 2-minute wait: the gateway recorded why it could not drop the slot.
    expect(Date.now() - started).toBeLessThan(30_000);
  }, 60_000);
});

async function until(test: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`not true after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A PostgreSQL source of `source`'s table `public.orders`, reached at `host`. */
function createSource(gw: TestGateway, t: TeamSetup, source: ScratchDatabase, name: string, host: string) {
  return gw.http
    .post('/api/connectors/')
    .set(t.owner.auth)
    .send({
      name,
      connector_type: 'POSTGRES_SOURCE',
      team_id: t.teamId,
      json_configuration: { ...source.settings, host, whitelist: ['public.orders'] },
    });
}
