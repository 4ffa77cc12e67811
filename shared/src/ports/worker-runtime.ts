import type { WorkerTermination } from '../catalog/resources.js';

/**
 * The worker runtime port: how the operator starts, stops and observes a
 * worker (one per running connector). Kubernetes adapter: one Deployment per
 * worker, readiness and termination messages from pod status, pod logs.
 * Process adapter (one machine): one child process per worker, readiness from
 * its `/readyz`, its exit status and termination message, its output as logs.
 * Both speak the same worker contract: the worker reads its configuration
 * from the file `SLUICE_WORKER_CONFIG` names, serves `/healthz`, `/readyz`
 * and `/metrics` on `SLUICE_WORKER_PORT`, and before a fatal exit writes one
 * line saying why to `SLUICE_TERMINATION_MESSAGE_PATH` (Kubernetes'
 * terminationMessagePath).
 */
export interface WorkerSpec {
  /** Stable id: one worker per connector, `<namespace>/<name>` of the connector (`workerId`). */
  id: string;
  /** Namespace of the connector (Deployments live there too). */
  namespace: string;
  /** Configuration the worker reads at start (no inline secrets: references only). */
  config: Record<string, unknown>;
  /**
   * Changes when the configuration changes or a restart is asked for, so a
   * running worker is replaced; the same hash again is a no-op.
   */
  configHash: string;
  /**
   * How many instances run (default 1): a target's workers share its
   * partitions in one consumer group. Not part of `configHash`: a new count
   * adds or removes instances and leaves the running ones alone.
   */
  replicas?: number;
  /**
   * Whether instances may run side by side (a target): a new configuration
   * then replaces them rolling; otherwise (a source, one reader) the old
   * instance is gone before the new one starts.
   */
  scalesOut?: boolean;
  /** Labels for what the runtime creates (Deployment, pod) so `kubectl get -l` finds it. */
  labels?: Record<string, string>;
  /** The connector, so a Deployment in its namespace is owned (and garbage-collected) with it. */
  owner?: { apiVersion: string; kind: string; name: string; uid: string };
}

/** The worker of a connector: its namespace and name (namespaces cannot contain `/`). */
export function workerId(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

export function parseWorkerId(id: string): { namespace: string; name: string } {
  const slash = id.indexOf('/');
  return { namespace: id.slice(0, slash), name: id.slice(slash + 1) };
}

/**
 * starting: launched (or restarted), not ready yet; ready: its /readyz
 * answers 200; failed: not running — it ended and waits for its restart
 * (kubelet's back-off: `lastTermination` says how it ended), or it cannot be
 * started (a missing Secret, a bad image: no `lastTermination`) — `message`
 * says why; stopping: asked to stop, still there. Both runtimes restart a
 * worker that ends, whatever its exit code (Kubernetes' restartPolicy Always).
 */
export type WorkerPhase = 'starting' | 'ready' | 'failed' | 'stopping';

export interface WorkerObservation {
  id: string;
  phase: WorkerPhase;
  configHash: string;
  /** Why it is failed (message only, never a secret). */
  message?: string;
  /** Times the runtime restarted this worker (this configuration) after it ended: Kubernetes' restartCount. */
  restarts: number;
  /** The instances asked for (WorkerSpec.replicas) of this configuration; 1 when unset. */
  replicas?: number;
  /** Instances of this configuration ready now (the connector's status.replicas). */
  readyReplicas?: number;
  /** How its last run ended, if one did. */
  lastTermination?: WorkerTermination;
  /**
   * Which run this is, where configHash and restarts do not tell (Kubernetes:
   * the uid of the pod whose log is the worker's, so that a pod rescheduled
   * with the same configuration is a new run for the log streams).
   */
  instance?: string;
}

/** A termination in words: `the worker was killed by SIGKILL`, `the worker exited with code 1: <its line>`. */
export function describeTermination(t: WorkerTermination): string {
  const how =
    t.reason === 'StartError'
      ? 'could not be started'
      : t.reason === 'OOMKilled'
        ? 'ran out of memory (OOMKilled)'
        : t.signal
          ? `was killed by ${t.signal}`
          : `exited with code ${t.exitCode ?? 'unknown'}`;
  return `the worker ${how}${t.message ? `: ${t.message}` : ''}`;
}

/**
 * What can be learnt about the workers without changing them: the gateway's
 * view on Kubernetes (it serves the workers' logs, it never runs them).
 */
export interface WorkerReaderPort {
  readonly adapter: 'process' | 'kubernetes';
  observe(id: string): Promise<WorkerObservation | undefined>;
  list(): Promise<WorkerObservation[]>;
  /** Calls `listener(id)` whenever a worker's observation changes; returns the unsubscribe. */
  subscribe(listener: (id: string) => void): () => void;
  /**
   * Where the worker's Prometheus `/metrics` answers (the process adapter: its
   * local port; Kubernetes: a ready pod's IP and the worker port); undefined
   * while it has no ready instance. The operator's monitoring collector reads it.
   */
  metricsUrl(id: string): Promise<string | undefined>;
  /**
   * Where each ready instance's `/metrics` answers: a worker of several
   * replicas has one per instance, and its figures are their sum. Absent:
   * `metricsUrl`'s one.
   */
  metricsUrls?(id: string): Promise<string[]>;
  /** Log lines of the worker, the last `tail` then following while `signal` is live. */
  logs(id: string, options: { tail?: number; follow?: boolean; signal?: AbortSignal }): AsyncIterable<string>;
  /** Stops watching (a runtime: see `WorkerRuntimePort.close`). */
  close(): Promise<void>;
}

export interface WorkerRuntimePort extends WorkerReaderPort {
  /** Runs the worker of `spec.id` with this configuration (replacing one with another hash). */
  ensure(spec: WorkerSpec): Promise<void>;
  /**
   * Stops and removes the worker (idempotent). The process adapter resolves
   * once it exited; the Kubernetes adapter once the Deployment is deleted,
   * and `observe` shows `stopping` until its pods are gone.
   */
  stop(id: string): Promise<void>;
  /** Stops every worker (process adapter) or nothing (Kubernetes: workers outlive the operator). */
  close(): Promise<void>;
}

/**
 * NODE_OPTIONS of a worker unless SLUICE_WORKER_NODE_OPTIONS (process
 * runtime) or the chart's `workers.nodeOptions` (Deployments) say otherwise.
 * With Node's defaults a busy worker's resident memory reached 300–440 MiB
 * (bench/README.md, "Pipeline"), most of it a young generation V8 sizes for
 * throughput; these keep it near 200–260 MiB at a few percent of throughput.
 */
export const DEFAULT_WORKER_NODE_OPTIONS = '--max-semi-space-size=8 --max-old-space-size=192';

/** The NODE_OPTIONS a worker process gets (an empty SLUICE_WORKER_NODE_OPTIONS: Node's defaults). */
export function workerNodeOptions(env: NodeJS.ProcessEnv = process.env): string {
  return env.SLUICE_WORKER_NODE_OPTIONS ?? DEFAULT_WORKER_NODE_OPTIONS;
}
