import type { KubeConfig } from '@kubernetes/client-node';
import { KubernetesCluster } from '@sluice/shared/cluster';
import { type ClusterPort, type WorkerRuntimePort } from '@sluice/shared/ports';
import { KubernetesSecretStore } from '@sluice/shared/secrets';
import { Controller, type ControllerOptions } from '../src/controller/controller.js';
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
  options: Partial<ControllerOptions> = {},
): () => Promise<void> {
  const controller = new Controller({
    cluster,
    runtime,
    events: new KubernetesEventRecorder(kc, 'sluice-operator', silentLogger),
    log: silentLogger,
    namespaces: typeof namespaces === 'string' ? [namespaces] : namespaces,
    clusterFor: (namespace) => new KubernetesCluster({ kubeConfig: kc, namespace }),
    // As the operator process: managed Secrets of the first (home) namespace.
    secrets: new KubernetesSecretStore(kc),
    secretNamespace: typeof namespaces === 'string' ? namespaces : namespaces[0],
    ...options,
  });
  const ac = new AbortController();
  const running = controller.run(ac.signal);
  return async () => {
    ac.abort();
    await running;
  };
}
