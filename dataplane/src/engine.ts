import type { WorkerConfig } from '@sluice/shared/catalog';
import type { MetricsRegistry } from '@sluice/shared/metrics';

// The contract between the worker program and its engines, apart from the
// registry (engines.ts) so that engines and the target loop depend on it
// without depending on one another.

/** What the worker program gives an engine besides its configuration. */
export interface WorkerContext {
  /** Families registered here are served on /metrics. */
  metrics: MetricsRegistry;
  /** One structured log line (stdout); never pass a secret or a message's content. */
  log(level: 'info' | 'warn' | 'error', msg: string, fields?: Record<string, unknown>): void;
}

/**
 * What moves data for one (role, connector type): started with the worker's
 * configuration, it resolves once connected and consuming (the worker then
 * answers /readyz with 200) and runs until `signal` aborts. A thrown error is
 * fatal: its message becomes the connector's error.
 */
export interface Engine {
  start(config: WorkerConfig, signal: AbortSignal, ctx: WorkerContext): Promise<{ done: Promise<void> }>;
}
