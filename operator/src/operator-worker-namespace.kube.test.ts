import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { join, resolve } from 'node:path';
import { ApiException, AppsV1Api, CoordinationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { type ConnectorResource } from '@sluice/shared/catalog';
import { KubernetesCluster } from '@sluice/shared/cluster';
import { workerId } from '@sluice/shared/ports';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { defaultPodTemplate, workerDeployment } from './runtime/worker-deployment.js';

// The built operator (`operator/dist/main.js`, as the chart runs it) upgraded
// from the shared layout to a worker namespace of its own
// (SLUICE_WORKER_NAMESPACE; docs/security.md, "Worker namespace"), on the
// real API server: once it leads, the managed Secret and the worker
// Deployment the earlier release left in the control plane's namespace are
// in the worker namespace, the worker mapped to its Secret there; the Lease
// stays in the control plane's namespace.
const ROOT = resolve(import.meta.dirname, '../..');
const MAIN = join(ROOT, 'operator/dist/main.js');

describeWithKube('the operator process with a worker namespace (real API server)', () => {
  const kc = new KubeConfig();
  const run = randomUUID().slice(0, 8);
  const home = `wnp-cp-${run}`;
  const workers = `wnp-wk-${run}`;
  const id = randomUUID();
  const managed = `sluice-connector-${id}`;
  const deployment = `sluice-worker-${id}`;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let operator: ChildProcess | undefined;
  let output = '';

  const exists = async (read: () => Promise<unknown>) => {
    try {
      await read();
      return true;
    } catch (err) {
      if (err instanceof ApiException && err.code === 404) return false;
      throw err;
    }
  };
  async function until(what: string, test: () => Promise<boolean>, ms = 30_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await test())) {
      if (Date.now() > deadline)
        throw new Error(`${what}: not yet after ${ms} ms; operator said:\n${output}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  beforeAll(async () => {
    const kubeconfig = testKubeConfig() as string;
    kc.loadFromFile(kubeconfig);
    await installCrds(kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    apps = kc.makeApiClient(AppsV1Api);
    for (const name of [home, workers]) await core.createNamespace({ body: { metadata: { name } } });
    // What the earlier release left: the managed Secret and the worker, next to the connector.
    const ref = { valueFrom: { secretKeyRef: { name: managed, key: 'password' } } };
    await core.createNamespacedSecret({
      namespace: home,
      body: {
        metadata: { name: managed, labels: { 'sluice.dev/managed': 'true' } },
        stringData: { password: 'p' },
      },
    });
    const config = { topic: 'orders', bootstrap_servers: 'kafka:9092', sasl_password: ref };
    await apps.createNamespacedDeployment({
      namespace: home,
      body: workerDeployment(
        {
          id: workerId(home, id),
          namespace: home,
          config: { connector_id: id, role: 'source', configuration: config },
          configHash: 'earlier',
          labels: {},
        },
        defaultPodTemplate('registry.example/sluice:0.0.9'),
        home,
      ),
    });
    await new KubernetesCluster({ kubeConfig: kc, namespace: home }).create<ConnectorResource>({
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Connector',
      metadata: { name: id, namespace: home },
      spec: {
        name: 'orders',
        teamId: randomUUID(),
        connectorType: 'KAFKA_SOURCE',
        configuration: config,
        desiredState: 'running',
      },
    });
    operator = spawn(process.execPath, [MAIN], {
      env: {
        ...process.env,
        KUBECONFIG: kubeconfig,
        SLUICE_NAMESPACE: home,
        SLUICE_WORKER_NAMESPACE: workers,
        POD_NAME: 'op-a',
        SLUICE_WORKER_RUNTIME: 'kubernetes',
        SLUICE_WORKER_IMAGE: 'registry.example/sluice:0.1.0',
        SLUICE_LEASE_DURATION_S: '3',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    for (const s of [operator.stdout, operator.stderr]) {
      s?.on('data', (d: Buffer) => (output = (output + d.toString()).slice(-4000)));
    }
  }, 60_000);
  afterAll(async () => {
    if (operator && operator.exitCode === null) {
      const exited = new Promise((r) => operator!.once('exit', r));
      operator.kill('SIGTERM');
      await exited;
    }
    for (const name of [home, workers]) await core.deleteNamespace({ name }).catch(() => undefined);
  });

  it('moves the earlier managed Secret and worker, runs the worker in the worker namespace, leads from its own', async () => {
    await until('worker Deployment in the worker namespace', () =>
      exists(() => apps.readNamespacedDeployment({ name: deployment, namespace: workers })),
    );
    const d = await apps.readNamespacedDeployment({ name: deployment, namespace: workers });
    const refs = (d.spec?.template.spec?.containers[0]?.env ?? []).flatMap((e) =>
      e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef.name] : [],
    );
    expect(refs).toEqual([managed]);
    const moved = await core.readNamespacedSecret({ name: managed, namespace: workers });
    expect(Buffer.from(moved.data?.password ?? '', 'base64').toString()).toBe('p');
    expect(await exists(() => core.readNamespacedSecret({ name: managed, namespace: home }))).toBe(false);
    await until('earlier worker deleted', async () => {
      const d = await apps
        .readNamespacedDeployment({ name: deployment, namespace: home })
        .catch(() => undefined);
      return d === undefined || d.metadata?.deletionTimestamp !== undefined;
    });
    const coordination = kc.makeApiClient(CoordinationV1Api);
    const lease = await coordination.readNamespacedLease({ name: 'sluice-operator', namespace: home });
    expect(lease.spec?.holderIdentity).toBe('op-a');
    expect(output).toContain('moved managed secrets and workers to the worker namespace');
  }, 60_000);
});
