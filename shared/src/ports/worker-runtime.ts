/**
 * The worker runtime port: how the operator starts, stops and observes a
 * worker. Kubernetes adapter: one Deployment per worker, pod status and logs.
 * Embedded adapter: one child process per worker, its exit status and stdout.
 */
export interface WorkerSpec {
  /** Stable id: one worker per connector. */
  id: string;
  /** Configuration the worker reads at start (no inline secrets: references only). */
  config: Record<string, unknown>;
  /** Changes when the configuration changes, so a running worker is replaced. */
  configHash: string;
}

export type WorkerPhase = 'starting' | 'running' | 'ready' | 'failed' | 'stopped';

export interface WorkerObservation {
  id: string;
  phase: WorkerPhase;
  configHash: string;
  /** Last error the worker reported (message only, never a secret). */
  message?: string;
  restarts: number;
}

export interface WorkerRuntimePort {
  readonly adapter: 'process' | 'kubernetes';
  ensure(spec: WorkerSpec): Promise<void>;
  stop(id: string): Promise<void>;
  observe(id: string): Promise<WorkerObservation | undefined>;
  list(): Promise<WorkerObservation[]>;
  /** Log lines of the worker, the last `tail` then following while `signal` is live. */
  logs(id: string, options: { tail?: number; follow?: boolean; signal?: AbortSignal }): AsyncIterable<string>;
}
