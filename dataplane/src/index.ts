import { fileURLToPath } from 'node:url';

// The data plane as a library: the worker program (src/main.ts, one connector
// per process or pod) and every client of an external system. The gateway
// uses these for pre-flight checks, previews, backfills, capture release and
// slot measurements; the operator never imports this package (its runtimes
// start the worker program by path).

/** The worker program (built), as the process runtime starts it: `node <WORKER_MAIN>`. */
export const WORKER_MAIN = fileURLToPath(new URL('./main.js', import.meta.url));
// The clients of each external system (systems/<system>/): connections, probes, errors.
export * from './systems/kafka/connection.js';
export { brokerRefusal, isOutboundRefusal, type BrokerOutbound } from './systems/kafka/broker-policy.js';
export * from './systems/kafka/fetch.js';
export * from './systems/postgres/connection.js';
export * from './systems/oracle/connection.js';
// Pre-flight probes of each system (spec 4.5) and the one sentence a failure reads as.
export * from './systems/failure.js';
export * from './systems/kafka/errors.js';
export * from './systems/postgres/errors.js';
export * from './systems/mysql/errors.js';
export * from './systems/kafka/probes.js';
export * from './systems/postgres/probes.js';
export * from './systems/mysql/probes.js';
export * from './systems/oracle/probes.js';
export * from './systems/webhook/probes.js';
// The PostgreSQL capture's clean-up, used by the gateway when a source is deleted.
export { dropPostgresCdc } from './sources/postgres-cdc/cleanup.js';
export type { PostgresSourceSettings } from './sources/postgres-cdc/contract.js';
// The MySQL/MariaDB capture's position topic, deleted by the gateway when a source is deleted, and
// its binary logs measured against that position by the gateway while no worker reads them.
export {
  deletePositionTopic,
  positionTopic,
  readRecordedPosition,
} from './sources/mysql-cdc/position-store.js';
export { measureBinlogRetention, type BinlogRetention } from './sources/binlog-retention.js';
export type { MysqlSourceSettings } from './sources/mysql-cdc/contract.js';
// The slot's retained WAL, measured by the gateway while no worker reads it (paused sources).
export { measureSlotRetention, type SlotRetention } from './sources/slot-retention.js';
// Backfills (run by the gateway): the target loop's write path and sinks, a
// stream's offset range, a source table's keyset pages (docs/data-plane.md "Backfills").
export { metricsOf as targetMetrics } from './target/metrics.js';
export { writeBatch } from './target/write-path.js';
export { positiveSetting } from './settings.js';
export { prepareSubscription, type ConsumedMessage, type PreparedSubscription } from './target/records.js';
export { openKafkaSink } from './sinks/kafka.js';
export { openPostgresSink, openWebhookSink } from './sinks/target-engines.js';
export type { Sink } from './contracts.js';
export type { Engine, WorkerContext } from './engine.js';
export * from './backfill/stream-range.js';
export * from './backfill/table-pages.js';
export * from './backfill/stream-start.js';
export * from './backfill/group-read.js';
export * from './backfill/source-reader.js';
export * from './backfill/binlog-resume.js';
export type { BinlogPosition } from './sources/mysql-cdc/position.js';
// The preview of a subscription (gateway): the target's mapping and the
// PostgreSQL target's DDL, by the very functions the worker runs.
export { mapMessage, type MappedMessage } from './target/records.js';
export { castsByTable } from './sinks/target-engines.js';
export { describeTable, planBatch, uniqueKeyProblem, type PostgresTargetSettings } from './sinks/postgres.js';
export { ddlFor, typeConflicts, type TableRef, type TypeConflict } from './sinks/postgres-ddl.js';
