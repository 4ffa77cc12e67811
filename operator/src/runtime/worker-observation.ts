import type { V1ContainerStatus, V1Deployment, V1Pod } from '@kubernetes/client-node';
import { constants as osConstants } from 'node:os';
import { type WorkerTermination } from '@sluice/shared/catalog';
import { describeTermination, type WorkerObservation } from '@sluice/shared/ports';
import { CONFIG_HASH_ANNOTATION, WORKER_CONTAINER } from './worker-deployment.js';

// What a worker Deployment and its pods say, in the port's terms — a pure
// function, so every case is unit-tested without a cluster:
//   stopping  the Deployment is being deleted, or is gone while pods remain;
//   failed    the worker is not running: it ended and the kubelet restarts it
//             (state terminated, or waiting in CrashLoopBackOff: then
//             `lastTermination` says how it ended), or its pod cannot run
//             (a waiting reason that needs a person: missing Secret, bad
//             image), or the Deployment gave up (ProgressDeadlineExceeded,
//             ReplicaFailure);
//   ready     the Deployment's controller saw the current template and one
//             updated replica is ready;
//   starting  anything else (a restarted worker not ready yet included).
// `restarts` is the kubelet's restartCount and `lastTermination` the
// container's (last) terminated state: the same facts the process runtime
// reports, so the connector's status tells the same story under both.

/** Waiting reasons that do not resolve by waiting. */
const STUCK = new Set([
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
  const readyReplicas = current.filter(
    (p) =>
      !p.metadata?.deletionTimestamp &&
      (p.status?.containerStatuses ?? []).some((s) => s.name === WORKER_CONTAINER && s.ready),
  ).length;
  const base = { id, configHash, restarts, replicas: deployment.spec?.replicas ?? 1, readyReplicas };
  if (deployment.metadata?.deletionTimestamp) return { ...base, phase: 'stopping' };

  const lastTermination = latest(statuses.map(terminationOf));
  const withEnd = { ...base, ...(lastTermination ? { lastTermination } : {}) };
  const status = deployment.status ?? {};
  const observed = (status.observedGeneration ?? 0) >= (deployment.metadata?.generation ?? 0);
  const ready = observed && (status.updatedReplicas ?? 0) >= 1 && (status.readyReplicas ?? 0) >= 1;
  // A worker that crashed once and is ready again counts as ready.
  const readyNow = statuses.some((s) => s.ready);
  if (ready && (readyNow || statuses.length === 0)) return { ...withEnd, phase: 'ready' };
  const crashed = statuses.some(
    (s) => s.state?.terminated || s.state?.waiting?.reason === 'CrashLoopBackOff',
  );
  if (crashed && lastTermination) {
    return { ...withEnd, phase: 'failed', message: describeTermination(lastTermination) };
  }
  // Cannot run at all: no lastTermination, so the connector is `error` at once.
  const stuck = statuses.map(stuckOf).find((m) => m !== undefined) ?? deploymentFailure(deployment);
  if (stuck !== undefined) return { ...base, phase: 'failed', message: stuck };
  return { ...withEnd, phase: 'starting' };
}

function hashOf(annotations: Record<string, string> | undefined): string {
  return annotations?.[CONFIG_HASH_ANNOTATION] ?? '';
}

/** How the container's current or last run ended, in the port's terms. */
export function terminationOf(s: V1ContainerStatus): WorkerTermination | undefined {
  const t = s.state?.terminated ?? s.lastState?.terminated;
  if (!t) return undefined;
  // A signal is exit code 128 + its number (what container runtimes report for kill -9: 137).
  const signal =
    signalName(t.signal) ?? (t.exitCode > 128 && t.exitCode < 160 ? signalName(t.exitCode - 128) : undefined);
  const message = t.message?.trim().slice(0, 4096);
  return {
    reason: t.reason || (t.exitCode === 0 ? 'Completed' : 'Error'),
    exitCode: t.exitCode,
    ...(signal ? { signal } : {}),
    ...(message ? { message } : {}),
    finishedAt: toIso(t.finishedAt) ?? new Date(0).toISOString(),
  };
}

function latest(terminations: (WorkerTermination | undefined)[]): WorkerTermination | undefined {
  return terminations
    .filter((t): t is WorkerTermination => t !== undefined)
    .sort((a, b) => b.finishedAt.localeCompare(a.finishedAt))[0];
}

function signalName(n: number | undefined): string | undefined {
  if (!n) return undefined;
  return Object.entries(osConstants.signals).find(([, v]) => v === n)?.[0];
}

function toIso(d: Date | string | undefined): string | undefined {
  if (d === undefined) return undefined;
  const date = d instanceof Date ? d : new Date(d);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}

function stuckOf(s: V1ContainerStatus): string | undefined {
  const waiting = s.state?.waiting;
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
