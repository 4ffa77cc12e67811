import type { KubeConfig } from '@kubernetes/client-node';
import type { ClusterPort, WorkerRuntimePort } from '@sluice/shared';
import { Controller } from '../src/controller/controller.js';
import { KubernetesEventRecorder } from '../src/controller/kube-events.js';
import { silentLogger } from '../src/controller/logger.js';

/** A controller on a real API server for one namespace; the returned function stops it. */
export function startController(
  kc: KubeConfig,
  cluster: ClusterPort,
  runtime: WorkerRuntimePort,
  namespace: string,
): () => Promise<void> {
  const controller = new Controller({
    cluster,
    runtime,
    events: new KubernetesEventRecorder(kc, 'sluice-operator', silentLogger),
    log: silentLogger,
    namespace,
  });
  const ac = new AbortController();
  const running = controller.run(ac.signal);
  return async () => {
    ac.abort();
    await running;
  };
}
