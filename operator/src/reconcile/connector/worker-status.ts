import { isDeepStrictEqual } from 'node:util';
import { type ConnectorMove, type WorkerStatus } from '@sluice/shared/catalog';
import { describeTermination, type WorkerObservation } from '@sluice/shared/ports';
import type { Action, ObjectRef } from '../actions.js';

// A connector whose worker ends, under either runtime: the runtime restarts
// it with kubelet's back-off; the connector says `building` while it comes
// back and `live` once it is ready again, and `error` only once the worker
// has been restarted WORKER_FAILURE_THRESHOLD times without being seen
// ready in between — what a pod in CrashLoopBackOff shows: it cannot start.
// The count lives in the connector's status (`status.worker`), so it is the
// same whether the restarts were the process runtime's or the kubelet's.

/**
 * Restarts without becoming ready before a connector is `error`: with
 * kubelet's back-off (at once, 10 s, 20 s) a worker that fails at once every
 * time is `error` about 30 s after it was started.
 */
export const WORKER_FAILURE_THRESHOLD = 3;

/**
 * The worker's status after this observation. Restarts since last seen ready
 * add up across looks; a new worker (a new configuration or a start: its
 * restarts count from zero again) starts the count over.
 */
export function nextWorkerStatus(
  previous: WorkerStatus | undefined,
  worker: WorkerObservation,
): WorkerStatus {
  let consecutiveFailures: number;
  if (worker.phase === 'ready') consecutiveFailures = 0;
  else if (!previous || worker.restarts < previous.restarts) consecutiveFailures = worker.restarts;
  else consecutiveFailures = previous.consecutiveFailures + (worker.restarts - previous.restarts);
  return {
    restarts: worker.restarts,
    consecutiveFailures,
    ...(worker.lastTermination ? { lastTermination: worker.lastTermination } : {}),
  };
}

/**
 * The merge patch of `status.worker`, or undefined when it is unchanged: a
 * last termination the new status no longer has is cleared with null (a
 * merge patch keeps what it does not mention).
 */
export function workerStatusPatch(
  current: WorkerStatus | undefined,
  next: WorkerStatus,
): Record<string, unknown> | undefined {
  // Deeply, keys in any order: the API server may return them in another.
  if (isDeepStrictEqual(current, next)) return undefined;
  return current?.lastTermination && !next.lastTermination ? { ...next, lastTermination: null } : { ...next };
}

/**
 * `statusActions` (the connector's status patch and Events) with
 * `status.worker` in the status patch when the worker of the current
 * configuration (`hash`) shows something new. Without such a worker
 * (stopped, or one of an older configuration) the status keeps saying how the
 * last one fared.
 */
export function withWorkerStatus(
  statusActions: Action[],
  ref: ObjectRef,
  previous: WorkerStatus | undefined,
  worker: WorkerObservation | undefined,
  hash: string | undefined,
): Action[] {
  if (!worker || worker.configHash !== hash) return statusActions;
  const patch = workerStatusPatch(previous, nextWorkerStatus(previous, worker));
  if (!patch) return statusActions;
  const statusPatch = statusActions.find((a) => a.type === 'patchStatus');
  if (!statusPatch) return [{ type: 'patchStatus', ref, status: { worker: patch } }, ...statusActions];
  return statusActions.map((a) =>
    a === statusPatch ? { ...statusPatch, status: { ...statusPatch.status, worker: patch } } : a,
  );
}

/**
 * The move (states.ts, CONNECTOR_MOVES) of a running connector whose worker
 * (of the current configuration) is not ready, with its message: undefined when it is simply starting for the
 * first time (the caller's "waiting for the worker").
 */
export function notReadyState(
  worker: WorkerObservation,
  previous: WorkerStatus | undefined,
): { move: ConnectorMove; message: string } | undefined {
  if (worker.phase === 'ready' || worker.phase === 'stopping') return undefined;
  const status = nextWorkerStatus(previous, worker);
  const t = worker.lastTermination;
  // Not a crash but a worker that cannot be started at all (a missing Secret, a bad image).
  if (worker.phase === 'failed' && !t)
    return { move: 'workerFailed', message: worker.message ?? 'The worker failed' };
  if (!t) return undefined;
  const how = describeTermination(t);
  if (status.consecutiveFailures >= WORKER_FAILURE_THRESHOLD) {
    return {
      move: 'workerFailed',
      message: `${capitalized(how)} (restarted ${status.consecutiveFailures} times without becoming ready; still retrying)`,
    };
  }
  if (worker.phase === 'failed') {
    return {
      move: 'workerStarting',
      message: `${capitalized(how)}; restarting it (restart ${worker.restarts + 1})`,
    };
  }
  if (status.consecutiveFailures > 0) {
    return {
      move: 'workerStarting',
      message: `Waiting for the restarted worker to be ready (restart ${worker.restarts}; ${how})`,
    };
  }
  return undefined;
}

function capitalized(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
