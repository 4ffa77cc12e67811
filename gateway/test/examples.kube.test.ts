import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import {
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  loadAllYaml,
  PatchStrategy,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { configs, SECRETS, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { startTestGateway, type TestGateway } from './harness.js';
import { LOOKING, TURNED_ON_LATER } from '../src/features/backfills/backfills.reasons.js';

// GitOps: the manifests of examples/ applied with a Kubernetes client (as
// `kubectl apply` does) to a real API server appear in the REST API of a
// gateway running the Kubernetes adapter, through its mirror.
const EXAMPLE_TEAM = '3f1c9a52-6d7e-4b8f-9a0b-1c2d3e4f5a6b';

describeWithKube('examples/ applied to a real API server', () => {
  const ns = `ex-${randomUUID().slice(0, 8)}`;
  const kc = new KubeConfig();
  let gw: TestGateway;
  let t: TeamSetup;

  beforeAll(async () => {
    const kubeconfig = testKubeConfig() as string;
    kc.loadFromFile(kubeconfig);
    await installCrds(kubeconfig);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
    gw = await startTestGateway('pglite', {
      SLUICE_CLUSTER_ADAPTER: 'kubernetes',
      SLUICE_NAMESPACE: ns,
      KUBECONFIG: kubeconfig,
    });
    t = await setupTeam(gw, 'gitops');
  });
  afterAll(async () => {
    await gw?.close();
  });

  async function apply(file: string): Promise<void> {
    const text = readFileSync(resolve(import.meta.dirname, '../../examples', file), 'utf8').replaceAll(
      EXAMPLE_TEAM,
      t.teamId,
    );
    const api = KubernetesObjectApi.makeApiClient(kc);
    for (const doc of loadAllYaml(text) as KubernetesObject[]) {
      doc.metadata = { ...doc.metadata, namespace: ns };
      await api.create(doc);
    }
  }

  async function until<T>(read: () => Promise<T>, test: (v: T) => boolean, ms = 15_000): Promise<T> {
    const deadline = Date.now() + ms;
    let v = await read();
    while (!test(v) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      v = await read();
    }
    return v;
  }

  it('a Kafka → Kafka pipeline applied as custom resources is listed with its team and parts', async () => {
    await apply('kafka-to-kafka-pipeline.yaml');
    const list = await until(
      async () =>
        (await gw.http.get('/api/pipelines/').set(t.owner.auth)).body as { items: Record<string, unknown>[] },
      (b) => b.items?.length === 1,
    );
    expect(list.items[0]).toMatchObject({ name: 'orders-copy' });
    const pipeline = (await gw.http.get(`/api/pipelines/${list.items[0]!.id as string}`).set(t.owner.auth))
      .body;
    expect(pipeline).toMatchObject({
      team_id: t.teamId,
      source_name: 'orders-in',
      source_type: 'KAFKA_SOURCE',
      target_name: 'orders-out',
      subscription_target_table_name: 'orders-copy',
    });
    const connectors = (await gw.http.get(`/api/connectors/?team_id=${t.teamId}`).set(t.owner.auth)).body;
    expect(connectors.total).toBe(2);
  });

  it('backfill switched on in the repository (kubectl) shows a pending replay; the status keeps the decision', async () => {
    const id = '0b6f7a7e-8c1d-4f5e-9a3b-1c2d3e4f5a64'; // the Subscription of kafka-to-kafka-pipeline.yaml
    const api = KubernetesObjectApi.makeApiClient(kc);
    const ref = {
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Subscription',
      metadata: { name: id, namespace: ns },
    };
    await api.patch(
      { ...ref, spec: { backfill: true } },
      undefined,
      undefined,
      'kubectl',
      undefined,
      PatchStrategy.MergePatch,
    );
    const read = await until(
      () => gw.http.get(`/api/subscriptions/${id}`).set(t.owner.auth),
      (r) => r.body.backfill === true,
    );
    expect(read.body.auto_backfill).toMatchObject({
      state: 'pending',
      reason: `${LOOKING}: the gateway looks whether its consumer has read the stream yet`,
    });
    // What the gateway writes once it decided survives the CRD's structural schema (nothing pruned).
    const autoBackfill = {
      state: 'started',
      reason: TURNED_ON_LATER,
      backfillId: randomUUID(),
      decidedAt: new Date().toISOString(),
    };
    await gw.ctx.cluster.patchStatus('Subscription', ns, id, { autoBackfill });
    const cr = (await api.read(ref)) as unknown as { status?: { autoBackfill?: unknown } };
    expect(cr.status?.autoBackfill).toEqual(autoBackfill);
  });

  it('a Postgres CDC source with a secret reference shows the reference redacted and its data models', async () => {
    await apply('postgres-cdc-source.yaml');
    const id = '5d0e2f3a-7b8c-4d9e-8f0a-1b2c3d4e5f60';
    const res = await until(
      () => gw.http.get(`/api/connectors/${id}`).set(t.owner.auth),
      (r) => r.status === 200,
    );
    expect(res.body).toMatchObject({
      name: 'inventory-cdc',
      connector_type: 'POSTGRES_SOURCE',
      status: 'paused',
    });
    expect(JSON.stringify(res.body)).not.toContain('change-me');
  });

  it('an inline password written through the REST API goes into a Kubernetes Secret, the resource holds a reference', async () => {
    const res = await gw.http.post('/api/connectors/').set(t.owner.auth).send({
      name: 'shop-cdc',
      team_id: t.teamId,
      connector_type: 'POSTGRES_SOURCE',
      json_configuration: configs.pgSource(),
    });
    expect(res.status).toBe(201);
    expect(res.body.json_configuration.password).toBe('<redacted>');
    const secret = await kc
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ name: `sluice-connector-${res.body.id as string}`, namespace: ns });
    const values = Object.values(secret.data ?? {}).map((v) => Buffer.from(v, 'base64').toString('utf8'));
    expect(values).toContain(SECRETS.pgSource);
    const cr = await KubernetesObjectApi.makeApiClient(kc).read({
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Connector',
      metadata: { name: res.body.id as string, namespace: ns },
    });
    const spec = (cr as unknown as { spec: { configuration: { password: unknown } } }).spec;
    expect(spec.configuration.password).toEqual({
      valueFrom: {
        secretKeyRef: { name: `sluice-connector-${res.body.id as string}`, key: expect.any(String) },
      },
    });
    expect(JSON.stringify(cr)).not.toContain(SECRETS.pgSource);
    // The referable secrets of the namespace, keys only.
    const listed = (await gw.http.get('/api/k8s-secrets').set(t.owner.auth)).body;
    expect(JSON.stringify(listed)).toContain('inventory-db');
    expect(JSON.stringify(listed)).not.toContain(SECRETS.pgSource);
  });
});
