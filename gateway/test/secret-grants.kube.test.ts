import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import {
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { createConnector, type TeamSetup } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway, type TestUser } from './harness.js';
import { expectNothingLeaked } from './preflight-fixtures.js';
import type { RecordingListener } from './recording-listener.js';
import { secretNames, secretRef, startGrantSetup } from './secret-grant-fixtures.js';

// Secret grants with the Kubernetes adapter, on the real API server: Secrets
// made with a Kubernetes client (as `kubectl create secret` and `kubectl
// annotate` do) are usable only once annotated for the team; a Secret
// labelled as the control plane's (the chart's `<release>-sluice-keys`) is
// never usable, even annotated; managed Secrets stay their object's.

const run = randomUUID().slice(0, 6);
const PROD_PASSWORD = `k8s-teama-prod-${run}`;
const JWT_KEY = `k8s-jwt-key-${run}`;
const HEADER_KEY = `k8s-header-${run}`;

describeWithKube('secret grants on the Kubernetes adapter (real API server)', () => {
  const ns = `grants-${run}`;
  const kc = new KubeConfig();
  let core: CoreV1Api;
  let gw: TestGateway;
  let admin: TestUser;
  let a: TeamSetup;
  let b: TeamSetup;
  let hook: RecordingListener;
  let hookUrl: string;
  const dbKind = databaseKinds().at(-1)!;

  beforeAll(async () => {
    const kubeconfig = testKubeConfig() as string;
    kc.loadFromFile(kubeconfig);
    await installCrds(kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: ns } } });
    gw = await startTestGateway(dbKind, {
      SLUICE_CLUSTER_ADAPTER: 'kubernetes',
      SLUICE_NAMESPACE: ns,
      KUBECONFIG: kubeconfig,
      SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128',
    });
    ({ admin, a, b, hook } = await startGrantSetup(gw, 'k8s-grant'));
    hookUrl = hook.url;
  }, 120_000);
  afterAll(async () => {
    await hook.close();
    await gw?.close();
    await core.deleteNamespace({ name: ns }).catch(() => undefined);
    expectNothingLeaked(gw, [PROD_PASSWORD, JWT_KEY, HEADER_KEY]);
  });

  const check = (token: unknown, u: TestUser) =>
    gw.http
      .post('/api/connector-types/webhook-target/check-credentials')
      .set(u.auth)
      .send({ url: hookUrl, auth_type: 'bearer', bearer_token: token });
  // A JSON merge patch, as `kubectl annotate` sends (null removes an annotation).
  const annotate = (name: string, annotations: Record<string, string | null>) =>
    core.patchNamespacedSecret(
      { name, namespace: ns, body: { metadata: { annotations } } },
      setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
    );

  it('refuses a Secret made with kubectl until it is annotated for the team', async () => {
    await core.createNamespacedSecret({
      namespace: ns,
      body: { metadata: { name: 'teama-prod-db' }, stringData: { password: PROD_PASSWORD } },
    });
    const newbie = await gw.user();
    for (const u of [newbie, a.owner, admin]) {
      const res = await check(secretRef('teama-prod-db', 'password'), u);
      expect(res.status).toBe(422);
      expect(res.body.detail[0]).toMatchObject({
        loc: ['body', 'bearer_token'],
        msg: expect.stringContaining('not granted to this team'),
      });
    }
    expect(hook.received).toEqual([]);
    expect(await secretNames(gw, a.owner)).toEqual([]);

    await annotate('teama-prod-db', { 'sluice.dev/allowed-teams': a.teamId });
    expect(await secretNames(gw, a.member)).toEqual(['teama-prod-db']);
    expect(await secretNames(gw, b.owner)).toEqual([]);
    const ok = await check(secretRef('teama-prod-db', 'password'), a.member);
    expect(ok.status).toBe(200);
    expect(hook.received.map((r) => r.headers.authorization)).toEqual([`Bearer ${PROD_PASSWORD}`]);
    expect((await check(secretRef('teama-prod-db', 'password'), b.owner)).status).toBe(422);
    // By environment too.
    await annotate('teama-prod-db', { 'sluice.dev/allowed-teams': null, 'sluice.dev/allowed-envs': b.envId });
    expect((await check(secretRef('teama-prod-db', 'password'), b.owner)).status).toBe(200);
    expect((await check(secretRef('teama-prod-db', 'password'), a.owner)).status).toBe(422);
    // POST /k8s-secrets leaves Secrets to the cluster tools here.
    const post = await gw.http
      .post('/api/k8s-secrets')
      .set(admin.auth)
      .send({ name: 'x', data: { k: 'v' } });
    expect(post.status).toBe(409);
  });

  it("never lets the control plane's Secret be used, annotated or not, nor deleted", async () => {
    await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: {
          name: 'prod-sluice-keys',
          labels: { 'sluice.dev/control-plane': 'true' },
          annotations: { 'sluice.dev/allowed-teams': a.teamId, 'sluice.dev/allowed-envs': a.envId },
        },
        stringData: { 'jwt-secret': JWT_KEY },
      },
    });
    const before = hook.received.length;
    for (const u of [a.owner, admin]) {
      expect((await check(secretRef('prod-sluice-keys', 'jwt-secret'), u)).status).toBe(422);
    }
    expect(hook.received.length).toBe(before);
    expect(await secretNames(gw, admin)).not.toContain('prod-sluice-keys');
    expect((await gw.http.delete('/api/k8s-secrets/prod-sluice-keys').set(admin.auth)).status).toBe(409);
    // And the Secrets Kubernetes makes for itself are no one's either.
    expect((await secretNames(gw, admin)).filter((n) => !n.startsWith('sluice-'))).toEqual(['teama-prod-db']);
  });

  it("keeps header values in the object's managed Secret and refuses that Secret to any other object", async () => {
    const c = await createConnector(gw, a.owner, a.teamId, `hdr-${run}`, 'WEBHOOK_TARGET', {
      url: hookUrl,
      headers: { 'X-Api-Key': HEADER_KEY },
    });
    const secret = await core.readNamespacedSecret({ name: `sluice-connector-${c.id}`, namespace: ns });
    expect(Object.values(secret.data ?? {}).map((v) => Buffer.from(v, 'base64').toString('utf8'))).toContain(
      HEADER_KEY,
    );
    const cr = await KubernetesObjectApi.makeApiClient(kc).read({
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Connector',
      metadata: { name: c.id, namespace: ns },
    });
    expect(JSON.stringify(cr)).not.toContain(HEADER_KEY);
    const read = await gw.http.get(`/api/connectors/${c.id}`).set(a.owner.auth);
    expect(read.body.json_configuration.headers).toEqual({ 'X-Api-Key': '<redacted>' });

    const key = Object.keys(secret.data ?? {})[0] as string;
    const stolen = secretRef(`sluice-connector-${c.id}`, key);
    const before = hook.received.length;
    const thief = await gw.http
      .post('/api/connectors/')
      .set(a.owner.auth)
      .send({
        name: `thief-${run}`,
        connector_type: 'WEBHOOK_TARGET',
        team_id: a.teamId,
        json_configuration: { url: hookUrl, headers: { 'X-Api-Key': stolen } },
      });
    expect(thief.status).toBe(422);
    expect(thief.body.detail[0].loc).toEqual(['body', 'json_configuration', 'headers', 'X-Api-Key']);
    expect((await check(stolen, admin)).status).toBe(422);
    expect(hook.received.length).toBe(before);
  });
});
