import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { WORKER_FINALIZER, type ConnectorResource } from '@sluice/shared/catalog';
import { InvalidError, KubernetesCluster } from '@sluice/shared/cluster';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { ProcessRuntime } from '../runtime/process-runtime.js';
import { startController } from '../../test/start-controller.js';

// The operator against a real kube-apiserver with the generated CRDs: a
// Connector applied as a custom resource is driven through spec 3.2 by the
// controller (workers as local processes: the scripted stand-in that speaks
// the worker contract), its status and Events land in the API server, and a
// restarted operator converges again.
const ROOT = resolve(import.meta.dirname, '../../..');
const FIXTURE = join(ROOT, 'testing/fixtures/scripted-worker.mjs');

describeWithKube('operator on a real API server', () => {
  const kc = new KubeConfig();
  const ns = `op-${randomUUID().slice(0, 8)}`;
  let cluster: KubernetesCluster;
  let stopOperator: () => Promise<void>;

  function startOperator(): () => Promise<void> {
    const runtime = new ProcessRuntime({
      command: [process.execPath, FIXTURE],
      workDir: mkdtempSync(join(tmpdir(), 'sluice-op-')),
      readinessIntervalMs: 50,
      // A failing worker is restarted 3 times before its connector is error: 0, 100, 200 ms here.
      backoff: { baseMs: 100, maxMs: 3000, resetAfterMs: 6000 },
    });
    const stopController = startController(kc, cluster, runtime, ns);
    return async () => {
      await stopController();
      await runtime.close();
    };
  }

  beforeAll(async () => {
    kc.loadFromFile(testKubeConfig() as string);
    await installCrds(testKubeConfig() as string);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
    cluster = new KubernetesCluster({ kubeConfig: kc, namespace: ns });
    stopOperator = startOperator();
  });
  afterAll(async () => {
    await stopOperator();
  });

  const connector = (name: string, script: string): ConnectorResource => ({
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'Connector',
    metadata: { name, namespace: ns },
    spec: {
      name: `conn-${name.slice(0, 8)}`,
      teamId: randomUUID(),
      connectorType: 'KAFKA_SOURCE',
      configuration: { topic: 'orders', bootstrap_servers: 'kafka:9092', script },
      desiredState: 'running',
    },
  });

  async function until(name: string, test: (c: ConnectorResource | undefined) => boolean, ms = 20_000) {
    const deadline = Date.now() + ms;
    let c: ConnectorResource | undefined;
    while (Date.now() < deadline) {
      c = await cluster.get<ConnectorResource>('Connector', ns, name);
      if (test(c)) return c;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`connector ${name} stayed ${JSON.stringify(c?.status)}`);
  }

  it('the API server enforces the CRD schema (enums, required fields)', async () => {
    const bad = connector(randomUUID(), 'ready');
    (bad.spec as { desiredState: string }).desiredState = 'sprinting';
    await expect(cluster.create(bad)).rejects.toBeInstanceOf(InvalidError);
    const missing = connector(randomUUID(), 'ready');
    delete (missing.spec as Partial<ConnectorResource['spec']>).teamId;
    await expect(cluster.create(missing)).rejects.toThrow(/teamId/);
  });

  it('drives an applied Connector to live with Ready=True, records Events, and stops it', async () => {
    const name = randomUUID();
    await cluster.create(connector(name, 'slow:300'));
    const live = await until(name, (c) => c?.status?.state === 'live');
    expect(live?.metadata.finalizers).toContain(WORKER_FINALIZER);
    expect(live?.status?.observedGeneration).toBe(live?.metadata.generation);
    expect(live?.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      reason: 'Live',
    });
    // Events are sent in the background (like client-go's broadcaster): wait for them.
    const reasons = async () =>
      (
        await kc.makeApiClient(CoreV1Api).listNamespacedEvent({
          namespace: ns,
          fieldSelector: `involvedObject.name=${name}`,
        })
      ).items.map((e) => e.reason);
    for (let i = 0; i < 100 && !(await reasons()).includes('Live'); i++)
      await new Promise((r) => setTimeout(r, 50));
    expect(await reasons()).toEqual(expect.arrayContaining(['Building', 'Live']));

    await cluster.patch('Connector', ns, name, { spec: { desiredState: 'stopped' } });
    await until(name, (c) => c?.status?.state === 'paused');
  });

  it('reports a failing worker as error (Degraded) with its message once restarts did not help', async () => {
    const name = randomUUID();
    await cluster.create(connector(name, 'fail:broker kafka:9092 refused the connection'));
    const failed = await until(name, (c) => c?.status?.state === 'error');
    expect(failed?.status?.message).toContain('broker kafka:9092 refused the connection');
    expect(failed?.status?.worker).toMatchObject({
      consecutiveFailures: 3,
      lastTermination: { reason: 'Error', exitCode: 1, message: 'broker kafka:9092 refused the connection' },
    });
    expect(failed?.status?.conditions?.find((c) => c.type === 'Degraded')?.status).toBe('True');
  });

  it('converges again after the operator restarts, and deletion waits for the worker', async () => {
    const name = randomUUID();
    await cluster.create(connector(name, 'ready'));
    await until(name, (c) => c?.status?.state === 'live');
    await stopOperator(); // its workers go with it (process runtime)
    await cluster.patch('Connector', ns, name, {
      spec: { configuration: { topic: 'orders', script: 'slow:200' } },
    });
    stopOperator = startOperator();
    const again = await until(name, (c) => c?.status?.state === 'live' && c.status.observedGeneration === 2);
    expect(again?.metadata.generation).toBe(2);
    await cluster.delete('Connector', ns, name);
    await until(name, (c) => c === undefined);
  });

  it('a connector deleted with kubectl takes its managed Secret with it', async () => {
    const name = randomUUID();
    const secret = `sluice-connector-${name}`;
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespacedSecret({
      namespace: ns,
      body: {
        metadata: { name: secret, labels: { 'sluice.dev/managed': 'true' } },
        stringData: { sasl_password: 'hunter2' },
      },
    });
    const c = connector(name, 'ready');
    c.spec.configuration = {
      ...c.spec.configuration,
      sasl_password: { valueFrom: { secretKeyRef: { name: secret, key: 'sasl_password' } } },
    };
    await cluster.create(c);
    await until(name, (x) => x?.status?.state === 'live');
    await cluster.delete('Connector', ns, name);
    await until(name, (x) => x === undefined);
    await expect(core.readNamespacedSecret({ name: secret, namespace: ns })).rejects.toMatchObject({
      code: 404,
    });
  });
});
