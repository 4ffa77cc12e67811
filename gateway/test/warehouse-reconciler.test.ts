import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { TEAM_LABEL, type WarehouseResource, type WarehouseSpec } from '@sluice/shared/catalog';
import { MANAGED_SECRET_LABEL } from '@sluice/shared/ports';
import { warehouseConnectionFingerprint } from '@sluice/shared/warehouses';
import { expectPassedTest, expectRefusedAddress } from '@sluice/testing/warehouse-status';
import { closeScanned, SECRETS, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';
import { untilBody } from './scripted-gateway.js';
import {
  createWarehouse,
  HTTP_PATH,
  startStandIn,
  warehouseEnv,
  type DatabricksStandIn,
} from './warehouse-fixtures.js';

/**
 * A Warehouse applied to the cluster directly (kubectl, Argo CD: no REST
 * call) is tested by the embedded operator as POST /warehouses/{id}/test
 * tests it: under the gateway's outbound policy (127.0.0.1 allowed here, the
 * rest of loopback not), with its token from the secret store, and its
 * verdict becomes its status and Ready condition, shown by the REST API.
 */
describe.each(databaseKinds())('the embedded operator tests applied Warehouses on %s', (kind) => {
  let gw: TestGateway;
  let t: TeamSetup;
  let standIn: DatabricksStandIn;
  let other: DatabricksStandIn;

  beforeAll(async () => {
    standIn = await startStandIn();
    other = await startStandIn();
    gw = await startTestGateway(kind, { ...warehouseEnv(standIn), SLUICE_EMBEDDED_OPERATOR: 'true' });
    t = await setupTeam(gw, 'whr');
  });
  afterAll(async () => {
    await standIn.close();
    await other.close();
    await closeScanned(gw);
  });

  /** A Warehouse written to the cluster as kubectl would, with its token in its managed secret. */
  async function apply(over: Partial<WarehouseSpec> = {}): Promise<string> {
    const id = randomUUID();
    const secret = `sluice-warehouse-${id}`;
    await gw.ctx.secretStore.put(
      gw.ctx.config.workerNamespace,
      secret,
      { access_token: SECRETS.warehouseToken },
      { labels: { [MANAGED_SECRET_LABEL]: 'true' } },
    );
    const object: WarehouseResource = {
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Warehouse',
      metadata: { name: id, namespace: gw.ctx.config.namespace, labels: { [TEAM_LABEL]: t.teamId } },
      spec: {
        name: `applied-${id.slice(0, 8)}`,
        teamId: t.teamId,
        serverHostname: standIn.host,
        httpPath: HTTP_PATH,
        accessToken: { valueFrom: { secretKeyRef: { name: secret, key: 'access_token' } } },
        catalog: 'main',
        schema: 'sales',
        ...over,
      },
    };
    await gw.ctx.cluster.create(object);
    return id;
  }
  const read = (id: string) =>
    gw.ctx.cluster.get<WarehouseResource>('Warehouse', gw.ctx.config.namespace, id);
  async function until(id: string, test: (w: WarehouseResource) => boolean, ms = 20_000) {
    const deadline = Date.now() + ms;
    let w = await read(id);
    while (!(w && test(w))) {
      if (Date.now() > deadline) throw new Error(`warehouse ${id} stayed ${JSON.stringify(w?.status)}`);
      await new Promise((r) => setTimeout(r, 100));
      w = await read(id);
    }
    return w;
  }
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('an applied Warehouse gets the status of its connection test with the Ready condition', async () => {
    standIn.clearLog();
    const id = await apply();
    const w = await until(id, (x) => x.status?.state !== undefined);
    expectPassedTest(w);
    // Spec 2.12's three read-only calls, with the token of its managed secret.
    expect(standIn.calls()).toEqual([
      'GET /api/2.0/sql/warehouses/abc123def4567890',
      'GET /api/2.1/unity-catalog/catalogs/main',
      'GET /api/2.1/unity-catalog/schemas/main.sales',
    ]);
    expect(standIn.requests.every((r) => r.auth === 'valid')).toBe(true);
    // The REST API shows it as POST /warehouses/{id}/test would have left it.
    const body = await untilBody(gw, t.owner.auth, `/api/warehouses/${id}`, (b) => b.status === 'Live');
    expect(body).toMatchObject({ status: 'Live', status_message: null, tested_at: w.status?.testedAt });
  });

  it('a rename is observed without a test; a new host is tested', async () => {
    const id = await apply();
    const first = await until(id, (x) => x.status?.state === 'Live');
    standIn.clearLog();
    await gw.ctx.cluster.patch('Warehouse', gw.ctx.config.namespace, id, { spec: { name: 'renamed' } });
    const renamed = await until(
      id,
      (x) => x.status?.observedGeneration === x.metadata.generation && x.spec.name === 'renamed',
    );
    await sleep(1000);
    expect(standIn.calls()).toEqual([]);
    expect(renamed.status?.testedAt).toBe(first.status?.testedAt);
    expect(renamed.status?.conditions?.[0]?.observedGeneration).toBe(renamed.metadata.generation);

    other.clearLog();
    await gw.ctx.cluster.patch('Warehouse', gw.ctx.config.namespace, id, {
      spec: { serverHostname: other.host },
    });
    const moved = await until(
      id,
      (x) =>
        x.status?.connectionFingerprint === warehouseConnectionFingerprint(x.spec) &&
        x.spec.serverHostname === other.host,
    );
    expect(moved.status).toMatchObject({ state: 'Live', observedGeneration: moved.metadata.generation });
    expect(other.calls()).toHaveLength(3);
    expect(standIn.calls()).toEqual([]);
  });

  it("a loopback address the policy does not allow is refused, with the policy's words in the status", async () => {
    const port = standIn.host.split(':')[1];
    const id = await apply({ serverHostname: `127.0.0.2:${port}` });
    const w = await until(id, (x) => x.status?.state !== undefined);
    expectRefusedAddress(w, '127.0.0.2');
    const body = await untilBody(gw, t.owner.auth, `/api/warehouses/${id}`, (b) => b.status === 'Error');
    expect(body.status_message).toBe(w.status?.message);
  });

  it('a token the team may not use fails the test, as POST /warehouses/{id}/test says it', async () => {
    const id = await apply({
      accessToken: { valueFrom: { secretKeyRef: { name: 'not-granted', key: 'token' } } },
    });
    const w = await until(id, (x) => x.status?.state !== undefined);
    expect(w.status?.state).toBe('Error');
    expect(w.status?.message).toMatch(/^The access token cannot be read: /);
  });

  it('a warehouse created and tested through the API is not tested again by the operator', async () => {
    const { id } = await createWarehouse(gw, t.owner, t.teamId, standIn);
    // Created Draft; the operator tests it like any new Warehouse.
    await until(id, (x) => x.status?.state === 'Live');
    standIn.clearLog();
    const tested = await gw.http.post(`/api/warehouses/${id}/test`).set(t.owner.auth);
    expect([tested.status, tested.body.status]).toEqual([200, 'Live']);
    expect(standIn.calls()).toHaveLength(3);
    await sleep(1000);
    expect(standIn.calls()).toHaveLength(3);
  });
});
