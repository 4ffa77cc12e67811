import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { type ConnectorResource } from '@sluice/shared/catalog';
import { KubernetesCluster } from '@sluice/shared/cluster';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { startController } from '../../test/start-controller.js';
import { ProcessRuntime } from '../runtime/process-runtime.js';

// SLUICE_WATCH_NAMESPACES with a list (the chart's rbac.extraNamespaces): the
// operator reconciles objects in every listed namespace — each watched by an
// adapter scoped to it — and leaves other namespaces alone.
const FIXTURE = join(resolve(import.meta.dirname, '../../..'), 'testing/fixtures/scripted-worker.mjs');

describeWithKube('operator watching a list of namespaces', () => {
  const kc = new KubeConfig();
  const id = randomUUID().slice(0, 6);
  const [home, extra, other] = [`home-${id}`, `extra-${id}`, `other-${id}`];
  let cluster: KubernetesCluster;
  let runtime: ProcessRuntime;
  let stop: () => Promise<void>;

  beforeAll(async () => {
    kc.loadFromFile(testKubeConfig() as string);
    await installCrds(testKubeConfig() as string);
    for (const name of [home, extra, other]) {
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name } } });
    }
    cluster = new KubernetesCluster({ kubeConfig: kc });
    runtime = new ProcessRuntime({
      command: [process.execPath, FIXTURE],
      workDir: mkdtempSync(join(tmpdir(), 'sluice-ns-')),
      readinessIntervalMs: 50,
    });
    stop = startController(kc, cluster, runtime, [home, extra]);
  });
  afterAll(async () => {
    await stop();
    await runtime.close();
  });

  const connector = (namespace: string): ConnectorResource => ({
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'Connector',
    metadata: { name: 'orders', namespace },
    spec: {
      name: 'orders',
      teamId: randomUUID(),
      connectorType: 'KAFKA_SOURCE',
      configuration: { topic: 'orders', bootstrap_servers: 'kafka:9092', script: 'ready' },
      desiredState: 'running',
    },
  });

  it('drives same-named connectors of two watched namespaces apart, and ignores a third', async () => {
    for (const ns of [home, extra, other]) await cluster.create(connector(ns));
    const state = async (ns: string) =>
      (await cluster.get<ConnectorResource>('Connector', ns, 'orders'))?.status?.state;
    for (let i = 0; i < 200 && ((await state(home)) !== 'live' || (await state(extra)) !== 'live'); i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(await state(home)).toBe('live');
    expect(await state(extra)).toBe('live');
    // One worker each: worker ids are namespace/name.
    expect((await runtime.list()).map((w) => w.id).sort()).toEqual([`${extra}/orders`, `${home}/orders`]);
    expect(await state(other)).toBeUndefined();
  });
});
