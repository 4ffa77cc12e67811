import type { WorkerConfig } from '@sluice/shared/catalog';
import type { Engine } from './engine.js';
import { kafkaSourceEngine } from './sources/kafka-source.js';
import { kafkaTargetEngine } from './sinks/kafka.js';
import { oracleTargetEngine } from './sinks/oracle.js';
import { postgresTargetEngine, webhookTargetEngine } from './sinks/target-engines.js';
import { mysqlSourceEngineOf } from './sources/mysql-engine.js';
import { postgresSourceEngine } from './sources/postgres-engine.js';

/** Engines by `role:CONNECTOR_TYPE`: a type without one ends in `error` (engineFor). */
export const ENGINES = new Map<string, Engine>([
  ['source:KAFKA_SOURCE', kafkaSourceEngine],
  ['target:KAFKA_TARGET', kafkaTargetEngine],
  ['source:POSTGRES_SOURCE', postgresSourceEngine],
  ['target:POSTGRES_TARGET', postgresTargetEngine],
  ['target:WEBHOOK_TARGET', webhookTargetEngine],
  ['target:ORACLE_TARGET', oracleTargetEngine],
  ['source:MYSQL_SOURCE', mysqlSourceEngineOf.MySQL],
  ['source:MARIADB_SOURCE', mysqlSourceEngineOf.MariaDB],
]);

/**
 * Engines that reach their system through the configured SSH bastion
 * (`ssh_host`, docs/ssh-tunnels.md). Any other refuses to start with a
 * tunnel setting: connecting straight to an address meant for the bastion
 * would bypass it, or reach the wrong server.
 */
const TUNNELLING = new Set([
  'source:POSTGRES_SOURCE',
  'source:MYSQL_SOURCE',
  'source:MARIADB_SOURCE',
  'target:POSTGRES_TARGET',
  'target:ORACLE_TARGET',
]);

/** The engine of a configuration, or why there is none. */
export function engineFor(config: WorkerConfig): Engine | string {
  const kind = `${config.role}:${config.connector_type}`;
  const engine = ENGINES.get(kind);
  if (!engine)
    return `${config.connector_type} ${config.role} workers are not supported by this version of Sluice`;
  const ssh = (config.configuration as Record<string, unknown> | undefined)?.ssh_host;
  if (typeof ssh === 'string' && ssh !== '' && !TUNNELLING.has(kind)) {
    return `${config.connector_type} ${config.role} workers cannot connect through an SSH bastion (ssh_host) in this version of Sluice: remove ssh_host and make the server reachable directly`;
  }
  return engine;
}
