import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import {
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
} from '@kubernetes/client-node';
import { describeWithKube, testKubeConfig } from '@sluice/testing/kube';
import { StopTimeoutError, stopWorkers } from './stop-workers.js';

// The first step of `helm uninstall` waits, a bounded time, until no worker
// pod is left (a source's slot is only free once its worker is gone). A pod
// that does not go — here one held by a finalizer, as a pod on a node that
// stopped answering stays Terminating — ends the step with an error naming
// the count, never a hook that waits for ever. Everything else is done.

describeWithKube('stopping the workers for helm uninstall: bounded', () => {
  const kc = new KubeConfig();
  const ns = `stop-${randomUUID().slice(0, 8)}`;
  const core = () => kc.makeApiClient(CoreV1Api);
  const workerLabels = {
    'app.kubernetes.io/managed-by': 'sluice-operator',
    'sluice.dev/worker': 'sluice-worker-a',
  };
  const stuck: V1Pod = {
    metadata: { name: 'sluice-worker-a-1', labels: workerLabels, finalizers: ['example.com/hold'] },
    spec: { containers: [{ name: 'worker', image: 'sluice:test' }] },
  };

  beforeAll(async () => {
    kc.loadFromFile(testKubeConfig() as string);
    await core().createNamespace({ body: { metadata: { name: ns } } });
    await kc.makeApiClient(AppsV1Api).createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'sluice-worker-a', labels: workerLabels },
        spec: {
          selector: { matchLabels: workerLabels },
          template: { metadata: { labels: workerLabels }, spec: stuck.spec! },
        },
      },
    });
    await core().createNamespacedPod({ namespace: ns, body: stuck });
  });
  afterAll(async () => {
    await core().patchNamespacedPod(
      { name: 'sluice-worker-a-1', namespace: ns, body: [{ op: 'remove', path: '/metadata/finalizers' }] },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
  });

  it('deletes the worker Deployment, then gives up on a pod that stays, saying so', async () => {
    const started = Date.now();
    const stop = stopWorkers({
      kubeConfig: kc,
      namespace: ns,
      controlPlane: ['sluice-gateway'],
      workerNamespace: ns,
      timeoutMs: 2000,
      pollMs: 200,
    });
    await expect(stop).rejects.toThrow(StopTimeoutError);
    await expect(stop).rejects.toThrow(`1 worker pod(s) of namespace ${ns} still there after 2 s`);
    expect(Date.now() - started).toBeLessThan(10_000);
    const left = await kc.makeApiClient(AppsV1Api).listNamespacedDeployment({ namespace: ns });
    expect(left.items.map((d) => d.metadata?.name)).toEqual([]);
  });
});
