import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { ApiException, AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { type ConnectorResource } from '@sluice/shared/catalog';
import { KubernetesCluster } from '@sluice/shared/cluster';
import { workerId, type WorkerSpec } from '@sluice/shared/ports';
import { KubernetesSecretStore } from '@sluice/shared/secrets';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { startController } from '../../test/start-controller.js';
import { silentLogger } from '../controller/logger.js';
import { DeploymentRuntime } from './deployment-runtime.js';
import { defaultPodTemplate, workerDeployment } from './worker-deployment.js';
import { workerGrants } from './worker-grants.js';
import { moveToWorkerNamespace } from './worker-namespace-move.js';

// Workers apart from the control plane (SLUICE_WORKER_NAMESPACE; the chart's
// default layout, docs/security.md "Worker namespace"), on the real API
// server, wired as operator/src/main.ts wires them: an install of the earlier
// layout (managed Secret and worker Deployment in the control plane's
// namespace) is moved by the leader before it reconciles; then the worker
// of a Connector of the control plane's namespace runs in the worker
// namespace, under the same name, given its managed Secret from there, and
// a Connector deleted with kubectl takes that Secret with it.

describeWithKube('a worker namespace apart from the control plane (operator, real API server)', () => {
  const kc = new KubeConfig();
  const run = randomUUID().slice(0, 8);
  const home = `wno-cp-${run}`;
  const workers = `wno-wk-${run}`;
  const id = randomUUID();
  const managed = `sluice-connector-${id}`;
  const deployment = `sluice-worker-${id}`;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let cluster: KubernetesCluster;
  let secrets: KubernetesSecretStore;

  const exists = async (read: () => Promise<unknown>) => {
    try {
      await read();
      return true;
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return false;
      throw err;
    }
  };
  const secretIn = (namespace: string, name: string) =>
    exists(() => core.readNamespacedSecret({ name, namespace }));
  const deploymentIn = (namespace: string, name: string) =>
    exists(() => apps.readNamespacedDeployment({ name, namespace }));
  async function until(what: string, test: () => Promise<boolean>, ms = 15_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await test())) {
      if (Date.now() > deadline) throw new Error(`${what}: not yet after ${ms} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const ref = { valueFrom: { secretKeyRef: { name: managed, key: 'headers.X-Api-Key' } } };

  beforeAll(async () => {
    const kubeconfig = testKubeConfig() as string;
    kc.loadFromFile(kubeconfig);
    await installCrds(kubeconfig);
    secrets = new KubernetesSecretStore(kc);
    core = kc.makeApiClient(CoreV1Api);
    apps = kc.makeApiClient(AppsV1Api);
    for (const name of [home, workers]) await core.createNamespace({ body: { metadata: { name } } });
    cluster = new KubernetesCluster({ kubeConfig: kc, namespace: home });
    // The earlier layout, in the control plane's namespace: the Connector's managed
    // Secret and its worker Deployment, next to Secrets that must not move.
    const secret = (name: string, labels: Record<string, string>) =>
      core.createNamespacedSecret({
        namespace: home,
        body: { metadata: { name, labels }, stringData: { 'headers.X-Api-Key': `value-of-${name}` } },
      });
    await secret(managed, { 'sluice.dev/managed': 'true' });
    await secret('sluice-keys', { 'sluice.dev/control-plane': 'true' });
    await secret(`sluice-connector-${randomUUID()}-cp`, {
      'sluice.dev/managed': 'true',
      'sluice.dev/control-plane': 'true',
    });
    await secret('orders-db', {});
    const old: WorkerSpec = {
      id: workerId(home, id),
      namespace: home,
      config: { connector_id: id, role: 'target', configuration: { headers: { 'X-Api-Key': ref } } },
      configHash: 'old',
      labels: {},
    };
    await apps.createNamespacedDeployment({
      namespace: home,
      body: workerDeployment(old, defaultPodTemplate('registry.example/sluice:0.0.9'), home),
    });
    await cluster.create<ConnectorResource>({
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Connector',
      metadata: { name: id, namespace: home },
      spec: {
        name: 'hook',
        teamId: randomUUID(),
        connectorType: 'WEBHOOK_TARGET',
        configuration: { url: 'https://example.com/x', headers: { 'X-Api-Key': ref } },
        desiredState: 'running',
      },
    });
  }, 60_000);
  afterAll(async () => {
    for (const name of [home, workers]) await core.deleteNamespace({ name }).catch(() => undefined);
  });

  it('moves the managed Secrets and workers an earlier layout left in the control plane namespace', async () => {
    const moved = await moveToWorkerNamespace({
      kubeConfig: kc,
      secrets,
      from: home,
      to: workers,
      log: silentLogger,
    });
    expect(moved).toEqual({ secrets: [managed], deployments: [deployment] });
    const copy = await secrets.get(workers, managed);
    expect(copy?.data).toEqual({ 'headers.X-Api-Key': `value-of-${managed}` });
    expect(copy?.labels).toMatchObject({ 'sluice.dev/managed': 'true' });
    expect(await secretIn(home, managed)).toBe(false);
    await until('old worker deleted', async () => !(await deploymentIn(home, deployment)));
    // The control plane's Secrets and the users' own stay where they are.
    const left = (await secrets.list(home)).map((s) => s.name).filter((n) => !n.startsWith('default-token'));
    expect(left).toEqual(expect.arrayContaining(['sluice-keys', 'orders-db']));
    expect(left.filter((n) => n.endsWith('-cp'))).toHaveLength(1);
    expect((await secrets.list(workers)).map((s) => s.name)).toEqual([managed]);
    // Again: nothing left to move.
    expect(
      await moveToWorkerNamespace({ kubeConfig: kc, secrets, from: home, to: workers, log: silentLogger }),
    ).toEqual({ secrets: [], deployments: [] });
  });

  it("runs the Connector's worker in the worker namespace with its managed Secret, and cleans up there", async () => {
    const runtime = new DeploymentRuntime({
      kubeConfig: kc,
      namespace: workers,
      homeNamespace: home,
      podTemplate: defaultPodTemplate('registry.example/sluice:0.1.0'),
      log: silentLogger,
      grantedRefs: workerGrants({
        secrets,
        secretNamespace: workers,
        clusterFor: (ns) => new KubernetesCluster({ kubeConfig: kc, namespace: ns }),
      }),
    });
    const stop = startController(kc, cluster, runtime, home, {
      secretNamespace: workers,
      homeNamespace: home,
    });
    try {
      await until('worker Deployment', () => deploymentIn(workers, deployment));
      const d = await apps.readNamespacedDeployment({ name: deployment, namespace: workers });
      const refs = (d.spec?.template.spec?.containers[0]?.env ?? []).flatMap((e) =>
        e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef.name] : [],
      );
      expect(refs).toEqual([managed]);
      expect(await deploymentIn(home, deployment)).toBe(false);

      await cluster.delete('Connector', home, id);
      await until('managed Secret deleted', async () => !(await secretIn(workers, managed)));
      await until('worker deleted', async () => !(await deploymentIn(workers, deployment)));
      await until('connector gone', async () => (await cluster.get('Connector', home, id)) === undefined);
    } finally {
      await stop();
      await runtime.close();
    }
  }, 60_000);
});
