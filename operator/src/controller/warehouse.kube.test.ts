import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  loadYaml,
  PatchStrategy,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { type WarehouseResource, type WarehouseSpec } from '@sluice/shared/catalog';
import { KubernetesCluster } from '@sluice/shared/cluster';
import { MANAGED_SECRET_LABEL } from '@sluice/shared/ports';
import { KubernetesSecretStore } from '@sluice/shared/secrets';
import {
  warehouseConnectionFingerprint,
  warehouseHttpOptions,
  warehouseOutboundFromEnv,
} from '@sluice/shared/warehouses';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { DatabricksStandIn } from '@sluice/testing/databricks-stand-in';
import { expectPassedTest, expectRefusedAddress } from '@sluice/testing/warehouse-status';
import { ProcessRuntime } from '../runtime/process-runtime.js';
import { startController } from '../../test/start-controller.js';

// The Warehouse reconciler against a real kube-apiserver with the generated
// CRD: a Warehouse applied as a custom resource (no gateway at all) is tested
// against the Databricks stand-in under the outbound policy the operator
// process reads from the gateway's variables (127.0.0.1 allowed, as a test
// setting; the rest of loopback refused), with its token from a Secret, and
// its verdict lands in its status with the Ready condition Argo CD reads.
const ROOT = resolve(import.meta.dirname, '../../..');
const TOKEN = 'dapi-kube-warehouse-7e1a';
const HTTP_PATH = '/sql/1.0/warehouses/abc123def4567890';

describeWithKube('the Warehouse reconciler on a real API server', () => {
  const kc = new KubeConfig();
  const ns = `wh-${randomUUID().slice(0, 8)}`;
  let cluster: KubernetesCluster;
  let standIn: DatabricksStandIn;
  let other: DatabricksStandIn;
  let runtime: ProcessRuntime;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    kc.loadFromFile(testKubeConfig() as string);
    await installCrds(testKubeConfig() as string);
    // A long-lived API server may hold an older Warehouse CRD: apply this one,
    // as the chart's upgrade notes say (kubectl apply --server-side).
    const crd = loadYaml<KubernetesObject>(
      readFileSync(join(ROOT, 'crds/sluice.dev_warehouses.yaml'), 'utf8'),
    );
    await KubernetesObjectApi.makeApiClient(kc).patch(
      crd,
      undefined,
      undefined,
      'kubectl',
      true,
      PatchStrategy.ServerSideApply,
    );
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
    cluster = new KubernetesCluster({ kubeConfig: kc, namespace: ns });
    standIn = await DatabricksStandIn.start({ token: TOKEN });
    other = await DatabricksStandIn.start({ token: TOKEN });
    const caFile = join(mkdtempSync(join(tmpdir(), 'sluice-wh-')), 'ca.pem');
    writeFileSync(caFile, standIn.ca);
    runtime = new ProcessRuntime({ command: ['false'], workDir: mkdtempSync(join(tmpdir(), 'sluice-wh-')) });
    stop = startController(kc, cluster, runtime, ns, {
      monitoringIntervalMs: 0,
      warehouses: {
        // As operator/src/main.ts builds them.
        http: warehouseHttpOptions(
          warehouseOutboundFromEnv({
            SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32',
            SLUICE_WAREHOUSE_CA_FILE: caFile,
          }),
        ),
        secrets: new KubernetesSecretStore(kc),
        secretNamespace: ns,
      },
    });
  }, 60_000);
  afterAll(async () => {
    await stop?.();
    await runtime?.close();
    await standIn?.close();
    await other?.close();
  });

  /** A managed token Secret and a Warehouse, created as kubectl would. */
  async function apply(over: Partial<WarehouseSpec> = {}): Promise<string> {
    const name = randomUUID();
    const secret = `sluice-warehouse-${name}`;
    await kc.makeApiClient(CoreV1Api).createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: secret, labels: { [MANAGED_SECRET_LABEL]: 'true' } },
        stringData: { token: TOKEN },
      },
    });
    await cluster.create<WarehouseResource>({
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Warehouse',
      metadata: { name, namespace: ns },
      spec: {
        name: `wh-${name.slice(0, 8)}`,
        teamId: randomUUID(),
        serverHostname: standIn.host,
        httpPath: HTTP_PATH,
        accessToken: { valueFrom: { secretKeyRef: { name: secret, key: 'token' } } },
        catalog: 'main',
        ...over,
      },
    });
    return name;
  }
  async function until(name: string, test: (w: WarehouseResource) => boolean, ms = 20_000) {
    const deadline = Date.now() + ms;
    for (;;) {
      const w = await cluster.get<WarehouseResource>('Warehouse', ns, name);
      if (w && test(w)) return w;
      if (Date.now() > deadline) throw new Error(`warehouse ${name} stayed ${JSON.stringify(w?.status)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('an applied Warehouse is tested: Live, Ready=True, observed, with its fingerprint', async () => {
    standIn.clearLog();
    const name = await apply();
    const w = await until(name, (x) => x.status?.state !== undefined);
    expectPassedTest(w);
    expect(standIn.calls()).toEqual([
      'GET /api/2.0/sql/warehouses/abc123def4567890',
      'GET /api/2.1/unity-catalog/catalogs/main',
    ]);
    expect(standIn.requests.every((r) => r.auth === 'valid')).toBe(true);
  });

  it('a rename is only observed; a new host is tested', async () => {
    const name = await apply();
    const first = await until(name, (x) => x.status?.state === 'Live');
    standIn.clearLog();
    await cluster.patch('Warehouse', ns, name, { spec: { name: 'renamed' } });
    const renamed = await until(
      name,
      (x) => x.spec.name === 'renamed' && x.status?.observedGeneration === x.metadata.generation,
    );
    await sleep(1000);
    expect(standIn.calls()).toEqual([]);
    expect(renamed.status?.testedAt).toBe(first.status?.testedAt);

    other.clearLog();
    await cluster.patch('Warehouse', ns, name, { spec: { serverHostname: other.host } });
    const moved = await until(
      name,
      (x) => x.spec.serverHostname === other.host && x.status?.observedGeneration === x.metadata.generation,
    );
    expect(moved.status).toMatchObject({
      state: 'Live',
      connectionFingerprint: warehouseConnectionFingerprint(moved.spec),
    });
    expect(other.calls()).toHaveLength(2);
    expect(standIn.calls()).toEqual([]);
  });

  it("a loopback address the policy does not allow: Error, Ready=False with the policy's words", async () => {
    const port = standIn.host.split(':')[1];
    const name = await apply({ serverHostname: `127.0.0.2:${port}` });
    const w = await until(name, (x) => x.status?.state !== undefined);
    expectRefusedAddress(w, '127.0.0.2');
  });

  it("another namespace's Warehouse cannot use a managed token by taking its owner's name", async () => {
    const name = await apply();
    await until(name, (x) => x.status?.state === 'Live');
    const elsewhere = `${ns}-x`;
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: elsewhere } } });
    const stopElsewhere = startController(kc, cluster, runtime, [ns, elsewhere], {
      monitoringIntervalMs: 0,
      warehouses: {
        http: warehouseHttpOptions(warehouseOutboundFromEnv({ SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32' })),
        secrets: new KubernetesSecretStore(kc),
        secretNamespace: ns,
      },
    });
    try {
      const copy = new KubernetesCluster({ kubeConfig: kc, namespace: elsewhere });
      const original = await cluster.get<WarehouseResource>('Warehouse', ns, name);
      await copy.create<WarehouseResource>({
        apiVersion: 'sluice.dev/v1alpha1',
        kind: 'Warehouse',
        metadata: { name, namespace: elsewhere },
        spec: original!.spec,
      });
      for (let i = 0; ; i++) {
        const w = await copy.get<WarehouseResource>('Warehouse', elsewhere, name);
        if (w?.status?.state) {
          expect(w.status.state).toBe('Error');
          expect(w.status.message).toMatch(/^The access token cannot be read: /);
          break;
        }
        if (i > 200) throw new Error(`stayed ${JSON.stringify(w?.status)}`);
        await sleep(100);
      }
    } finally {
      await stopElsewhere();
    }
  });
});
