import type { WorkerConfig } from '@sluice/shared/catalog';
import type { Engine } from './engine.js';
import { kafkaSourceEngine } from './sources/kafka-source.js';
import { kafkaTargetEngine } from './sinks/kafka.js';
import { oracleTargetEngine } from './sinks/oracle.js';
import { postgresTargetEngine, webhookTargetEngine } from './sinks/target-engines.js';
import { postgresSourceEngine } from './sources/postgres-engine.js';

/** Engines by `role:CONNECTOR_TYPE`: a type without one ends in `error` (engineFor). */
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
