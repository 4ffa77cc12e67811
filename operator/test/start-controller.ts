import type { KubeConfig } from '@kubernetes/client-node';
import { KubernetesCluster, type ClusterPort, type WorkerRuntimePort } from '@sluice/shared';
import { Controller } from '../src/controller/controller.js';
import { KubernetesEventRecorder } from '../src/controller/kube-events.js';
import { silentLogger } from '../src/controller/logger.js';

/**
 * A controller on a real API server for these namespaces (each watched
 * through its own scoped adapter, as the operator process does); the
 * returned function stops it.
 */
export function startController(
  kc: KubeConfig,
  cluster: ClusterPort,
  runtime: WorkerRuntimePort,
  namespaces: string | string[],
): () => Promise<void> {
  const controller = new Controller({
    cluster,
    runtime,
    events: new KubernetesEventRecorder(kc, 'sluice-operator', silentLogger),
    log: silentLogger,
    namespaces: typeof namespaces === 'string' ? [namespaces] : namespaces,
    clusterFor: (namespace) => new KubernetesCluster({ kubeConfig: kc, namespace }),
  });
  const ac = new AbortController();
  const running = controller.run(ac.signal);
  return async () => {
    ac.abort();
    await running;
  };
}
