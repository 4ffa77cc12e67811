import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type KubeConfig,
} from '@kubernetes/client-node';
import { WORKER_SELECTOR } from '../runtime/worker-deployment.js';

// The first step of `helm uninstall` (the chart's pre-delete hook,
// charts/sluice/README.md "Uninstalling"): nothing of Sluice may run once the
// release is gone. The control plane stops first — scaled to zero replicas,
// so no operator recreates a worker or puts a finalizer back, and no gateway
// writes a managed Secret, while the rest of the clean-up runs — then every
// worker Deployment is deleted and their pods are waited for, so a source's
// replication slot is free to be dropped by the next step (the gateway's
// capture release). Safe to run again: what is already stopped or gone is
// counted as such.

export interface StopOptions {
  kubeConfig: KubeConfig;
  /** The release namespace, where the control plane's Deployments are. */
  namespace: string;
  /** The control plane's Deployments (gateway, operator), scaled to zero. */
  controlPlane: readonly string[];
  /** The worker namespace: every worker Deployment there is deleted. */
  workerNamespace: string;
  /** The whole step's deadline. */
  timeoutMs: number;
  /** How often the pods are looked at while waiting. */
  pollMs?: number;
}

export interface StopReport {
  /** Control-plane Deployments found (and now at zero replicas). */
  controlPlane: string[];
  /** Worker Deployments deleted by this run. */
  workerDeployments: string[];
}

export class StopTimeoutError extends Error {
  override readonly name = 'StopTimeoutError';
}

const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

export async function stopWorkers(opts: StopOptions): Promise<StopReport> {
  const { namespace, workerNamespace } = opts;
  const deadline = Date.now() + opts.timeoutMs;
  const apps = opts.kubeConfig.makeApiClient(AppsV1Api);
  const core = opts.kubeConfig.makeApiClient(CoreV1Api);
  const waitForPods = async (ns: string, labelSelector: string, what: string) => {
    for (;;) {
      const left = (await core.listNamespacedPod({ namespace: ns, labelSelector })).items.length;
      if (left === 0) return;
      if (Date.now() >= deadline) {
        throw new StopTimeoutError(
          `${left} ${what} pod(s) of namespace ${ns} still there after ${Math.round(opts.timeoutMs / 1000)} s`,
        );
      }
      await new Promise((r) => setTimeout(r, opts.pollMs ?? 1000));
    }
  };

  const controlPlane: string[] = [];
  const selectors: string[] = [];
  for (const name of opts.controlPlane) {
    const found = await ignoreNotFound(apps.readNamespacedDeployment({ name, namespace }));
    if (!found) continue;
    if (found.spec?.replicas !== 0) {
      await ignoreNotFound(
        apps.patchNamespacedDeployment({ name, namespace, body: { spec: { replicas: 0 } } }, MERGE_PATCH),
      );
    }
    controlPlane.push(name);
    const labels = found.spec?.selector?.matchLabels ?? {};
    if (Object.keys(labels).length)
      selectors.push(
        Object.entries(labels)
          .map(([k, v]) => `${k}=${v}`)
          .join(','),
      );
  }
  for (const selector of selectors) await waitForPods(namespace, selector, 'control-plane');

  const workerDeployments: string[] = [];
  const workers = await apps.listNamespacedDeployment({
    namespace: workerNamespace,
    labelSelector: WORKER_SELECTOR,
  });
  for (const d of workers.items) {
    const name = d.metadata?.name;
    if (!name || d.metadata?.deletionTimestamp) continue;
    const deleted = await ignoreNotFound(
      apps.deleteNamespacedDeployment({ name, namespace: workerNamespace, propagationPolicy: 'Background' }),
    );
    if (deleted) workerDeployments.push(name);
  }
  await waitForPods(workerNamespace, WORKER_SELECTOR, 'worker');
  return { controlPlane, workerDeployments };
}

async function ignoreNotFound<T>(call: Promise<T>): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (err instanceof ApiException && err.code === 404) return undefined;
    throw err;
  }
}
