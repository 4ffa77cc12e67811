import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { ApiException, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { createConnector } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';
import { expectNothingLeaked } from './preflight-fixtures.js';
import { secretNames, secretRef, startGrantSetup, type GrantSetup } from './secret-grant-fixtures.js';

// Workers apart from the control plane (SLUICE_WORKER_NAMESPACE, the chart's
// default layout: docs/security.md, "Worker namespace"), on the real API
// server: managed Secrets are written to the worker namespace, `GET
// /k8s-secrets` lists that namespace only, and a reference never reaches a
// Secret of the control plane's namespace — not even one annotated for the
// team, which the grants alone would let through.

const run = randomUUID().slice(0, 6);
const HEADER_KEY = `wns-header-${run}`;
const CP_VALUE = `wns-control-plane-${run}`;
const WORKER_VALUE = `wns-worker-${run}`;

describeWithKube('a worker namespace apart from the control plane (real API server)', () => {
  const home = `wns-cp-${run}`;
  const workers = `wns-wk-${run}`;
  const kc = new KubeConfig();
  let core: CoreV1Api;
  let gw: TestGateway;
  let s: GrantSetup;

  const secretIn = async (namespace: string, name: string) => {
    try {
      return await core.readNamespacedSecret({ name, namespace });
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return undefined;
      throw err;
    }
  };
  const check = (token: unknown) =>
    gw.http
      .post('/api/connector-types/webhook-target/check-credentials')
      .set(s.a.member.auth)
      .send({ url: s.hook.url, auth_type: 'bearer', bearer_token: token });

  beforeAll(async () => {
    const kubeconfig = testKubeConfig() as string;
    kc.loadFromFile(kubeconfig);
    await installCrds(kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    for (const name of [home, workers]) await core.createNamespace({ body: { metadata: { name } } });
    gw = await startTestGateway(databaseKinds().at(-1)!, {
      SLUICE_CLUSTER_ADAPTER: 'kubernetes',
      SLUICE_NAMESPACE: home,
      SLUICE_WORKER_NAMESPACE: workers,
      KUBECONFIG: kubeconfig,
      SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128',
    });
    s = await startGrantSetup(gw, 'wns');
    // The same grant on both sides: only the namespace tells them apart.
    const grant = { 'sluice.dev/allowed-teams': s.a.teamId };
    await core.createNamespacedSecret({
      namespace: home,
      body: { metadata: { name: 'cp-only-db', annotations: grant }, stringData: { password: CP_VALUE } },
    });
    await core.createNamespacedSecret({
      namespace: workers,
      body: { metadata: { name: 'orders-db', annotations: grant }, stringData: { password: WORKER_VALUE } },
    });
  }, 120_000);
  afterAll(async () => {
    await s?.hook.close();
    await gw?.close();
    for (const name of [home, workers]) await core.deleteNamespace({ name }).catch(() => undefined);
    expectNothingLeaked(gw, [HEADER_KEY, CP_VALUE, WORKER_VALUE]);
  });

  it("writes a connector's managed Secret to the worker namespace, and deletes it there", async () => {
    const c = await createConnector(gw, s.a.owner, s.a.teamId, `hdr-${run}`, 'WEBHOOK_TARGET', {
      url: s.hook.url,
      headers: { 'X-Api-Key': HEADER_KEY },
    });
    const name = `sluice-connector-${c.id}`;
    const secret = await secretIn(workers, name);
    expect(secret?.metadata?.labels).toMatchObject({ 'sluice.dev/managed': 'true' });
    expect(Object.values(secret?.data ?? {}).map((v) => Buffer.from(v, 'base64').toString())).toEqual([
      HEADER_KEY,
    ]);
    expect(await secretIn(home, name)).toBeUndefined();
    // The object itself stays in the control plane's namespace.
    const cr = await gw.http.get(`/api/connectors/${c.id}`).set(s.a.owner.auth);
    expect(cr.status).toBe(200);

    expect((await gw.http.delete(`/api/connectors/${c.id}`).set(s.a.owner.auth)).status).toBe(204);
    expect(await secretIn(workers, name)).toBeUndefined();
  });

  it("lists the worker namespace's granted Secrets, never one of the control plane's namespace", async () => {
    expect(await secretNames(gw, s.a.member)).toEqual(['orders-db']);
    expect(await secretNames(gw, s.admin)).not.toContain('cp-only-db');
    expect((await gw.http.delete('/api/k8s-secrets/cp-only-db').set(s.admin.auth)).status).toBe(404);
    expect(await secretIn(home, 'cp-only-db')).toBeDefined();
  });

  it('refuses a reference to a Secret that only the control plane namespace holds', async () => {
    const refused = await check(secretRef('cp-only-db', 'password'));
    expect(refused.status).toBe(422);
    expect(refused.body.detail[0]).toMatchObject({
      loc: ['body', 'bearer_token'],
      msg: expect.stringContaining('Secret "cp-only-db" is not granted to this team'),
    });
    const write = await gw.http
      .post('/api/connectors/')
      .set(s.a.owner.auth)
      .send({
        name: `cp-ref-${run}`,
        connector_type: 'WEBHOOK_TARGET',
        team_id: s.a.teamId,
        json_configuration: {
          url: s.hook.url,
          headers: { 'X-Api-Key': secretRef('cp-only-db', 'password') },
        },
      });
    expect(write.status).toBe(422);
    expect(write.body.detail[0].loc).toEqual(['body', 'json_configuration', 'headers', 'X-Api-Key']);
    expect(s.hook.received.map((r) => r.headers.authorization)).toEqual([]);

    // The worker namespace's Secret of the same grant is the one that works.
    expect((await check(secretRef('orders-db', 'password'))).status).toBe(200);
    expect(s.hook.received.map((r) => r.headers.authorization)).toEqual([`Bearer ${WORKER_VALUE}`]);
  });
});
