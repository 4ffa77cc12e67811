import type { V1ContainerStatus, V1Deployment, V1Pod } from '@kubernetes/client-node';
import type { WorkerObservation } from '@sluice/shared';
import { CONFIG_HASH_ANNOTATION, WORKER_CONTAINER } from './worker-deployment.js';

// What a worker Deployment and its pods say, in the port's terms — a pure
// function, so every case is unit-tested without a cluster:
//   stopping  the Deployment is being deleted, or is gone while pods remain;
//   failed    the current pods cannot run (a waiting reason that needs a
//             person: missing Secret, bad image) or the worker exited with an
//             error — the message is its termination message; or the
//             Deployment gave up (ProgressDeadlineExceeded, ReplicaFailure);
//   ready     the Deployment's controller saw the current template and one
//             updated replica is ready;
//   starting  anything else.
// Kubernetes restarts a crashed worker by itself; if it then becomes ready,
// the observation is `ready` again (the connector leaves `error`).

/** Waiting reasons that do not resolve by waiting. */
const STUCK = new Set([
  'CrashLoopBackOff',
  'CreateContainerConfigError',
  'CreateContainerError',
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'RunContainerError',
]);

export function observeWorker(
  id: string,
  deployment: V1Deployment | undefined,
  pods: readonly V1Pod[],
): WorkerObservation | undefined {
  if (!deployment) {
    if (pods.length === 0) return undefined;
    return { id, phase: 'stopping', configHash: hashOf(pods[0]?.metadata?.annotations), restarts: 0 };
  }
  const configHash = hashOf(deployment.metadata?.annotations);
  const current = pods.filter((p) => hashOf(p.metadata?.annotations) === configHash);
  const statuses = current.flatMap((p) =>
    (p.status?.containerStatuses ?? []).filter((s) => s.name === WORKER_CONTAINER),
  );
  const restarts = statuses.reduce((sum, s) => sum + (s.restartCount ?? 0), 0);
  const base = { id, configHash, restarts };
  if (deployment.metadata?.deletionTimestamp) return { ...base, phase: 'stopping' };

  const failure = statuses.map(failureOf).find((m) => m !== undefined) ?? deploymentFailure(deployment);
  const status = deployment.status ?? {};
  const observed = (status.observedGeneration ?? 0) >= (deployment.metadata?.generation ?? 0);
  const ready = observed && (status.updatedReplicas ?? 0) >= 1 && (status.readyReplicas ?? 0) >= 1;
  // A worker that crashed once and is ready again counts as ready.
  const readyNow = statuses.some((s) => s.ready);
  if (ready && (readyNow || statuses.length === 0)) return { ...base, phase: 'ready' };
  if (failure !== undefined) return { ...base, phase: 'failed', message: failure };
  return { ...base, phase: 'starting' };
}

function hashOf(annotations: Record<string, string> | undefined): string {
  return annotations?.[CONFIG_HASH_ANNOTATION] ?? '';
}

function failureOf(s: V1ContainerStatus): string | undefined {
  const waiting = s.state?.waiting;
  const terminated = s.state?.terminated ?? s.lastState?.terminated;
  if (terminated && terminated.exitCode !== 0) {
    const why = terminated.message?.trim() || terminated.reason || '';
    const how = terminated.signal
      ? `was killed by signal ${terminated.signal}`
      : `exited with code ${terminated.exitCode}`;
    return `the worker ${how}${why ? `: ${why.slice(0, 4096)}` : ''}`;
  }
  if (waiting?.reason && STUCK.has(waiting.reason)) {
    return `the worker cannot start (${waiting.reason})${waiting.message ? `: ${waiting.message}` : ''}`;
  }
  return undefined;
}

function deploymentFailure(d: V1Deployment): string | undefined {
  for (const c of d.status?.conditions ?? []) {
    if (c.type === 'Progressing' && c.status === 'False' && c.reason === 'ProgressDeadlineExceeded') {
      return `the worker did not become ready in time: ${c.message ?? c.reason}`;
    }
    if (c.type === 'ReplicaFailure' && c.status === 'True') {
      return `the worker's pod could not be created: ${c.message ?? c.reason}`;
    }
  }
  return undefined;
}
