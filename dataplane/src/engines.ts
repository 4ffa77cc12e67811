import type { MetricsRegistry, WorkerConfig } from '@sluice/shared';
import { kafkaSourceEngine } from './sources/kafka-source.js';
import { kafkaTargetEngine } from './sinks/kafka.js';
import { oracleTargetEngine } from './sinks/oracle.js';
import { postgresTargetEngine, webhookTargetEngine } from './sinks/target-engines.js';
import { postgresSourceEngine } from './sources/postgres-engine.js';

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

/** Engines by `role:CONNECTOR_TYPE`. The data-plane issue fills this table. */
export const ENGINES = new Map<string, Engine>([
  ['source:KAFKA_SOURCE', kafkaSourceEngine],
  ['target:KAFKA_TARGET', kafkaTargetEngine],
  ['source:POSTGRES_SOURCE', postgresSourceEngine],
  ['target:POSTGRES_TARGET', postgresTargetEngine],
  ['target:WEBHOOK_TARGET', webhookTargetEngine],
  ['target:ORACLE_TARGET', oracleTargetEngine],
]);

/** The engine of a configuration, or why there is none. */
export function engineFor(config: WorkerConfig): Engine | string {
  const engine = ENGINES.get(`${config.role}:${config.connector_type}`);
  return (
    engine ?? `${config.connector_type} ${config.role} workers are not supported by this version of Sluice`
  );
}
