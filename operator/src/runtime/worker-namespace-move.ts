import { ApiException, AppsV1Api, type KubeConfig } from '@kubernetes/client-node';
import { type SecretStorePort } from '@sluice/shared/ports';
import { moveManagedSecrets } from '@sluice/shared/secrets';
import type { Logger } from '../controller/logger.js';
import { WORKER_SELECTOR } from './worker-deployment.js';

// An install upgraded to a worker namespace apart from the control plane's
// (docs/security.md, "Worker namespace"): its managed Secrets and worker
// Deployments are still in the control plane's namespace. The leader moves
// them before it reconciles anything:
//
// 1. each managed Secret is copied to the worker namespace (unless a newer
//    one is there already) and deleted from the old one;
// 2. the old worker Deployments are deleted, so the first reconcile creates
//    them again in the worker namespace, under the same names.
//
// Deleting before creating keeps one worker per connector, as the workers'
// own `Recreate` strategy does on every configuration change: a replication
// slot takes one reader, and a second consumer would make the group
// rebalance. The pause is one pod start. Users' own Secrets do not move:
// they belong to whoever made them (docs/security.md says who recreates them).

export interface WorkerNamespaceMoveOptions {
  kubeConfig: KubeConfig;
  secrets: SecretStorePort;
  /** The control plane's namespace, where the earlier layout kept workers. */
  from: string;
  /** The worker namespace. */
  to: string;
  log: Logger;
}

/** What was moved; nothing when the namespaces are one, or when RBAC gives no access to the old one. */
export async function moveToWorkerNamespace(opts: WorkerNamespaceMoveOptions): Promise<{
  secrets: string[];
  deployments: string[];
}> {
  const { from, to, log } = opts;
  const none = { secrets: [], deployments: [] };
  if (from === to) return none;
  try {
    const moved = await moveManagedSecrets(opts.secrets, from, to);
    const apps = opts.kubeConfig.makeApiClient(AppsV1Api);
    const old = await apps.listNamespacedDeployment({ namespace: from, labelSelector: WORKER_SELECTOR });
    const deployments: string[] = [];
    for (const d of old.items) {
      const name = d.metadata?.name;
      if (!name) continue;
      try {
        await apps.deleteNamespacedDeployment({ name, namespace: from, propagationPolicy: 'Background' });
        deployments.push(name);
      } catch (err) {
        if (status(err) !== 404) throw err;
      }
    }
    if (moved.copied.length || moved.deleted.length || deployments.length) {
      log.info(
        { from, to, secrets: moved.deleted, copied: moved.copied, deployments },
        'moved managed secrets and workers to the worker namespace',
      );
    }
    return { secrets: moved.deleted, deployments };
  } catch (err) {
    // The chart drops these rights with workers.moveFromReleaseNamespace=false: nothing left to move.
    if (status(err) === 403) {
      log.info({ from, to }, 'no access to the old worker namespace: nothing moved');
      return none;
    }
    throw err;
  }
}

function status(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}
