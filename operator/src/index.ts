import { fileURLToPath } from 'node:url';

// The operator as a library: the gateway runs it in-process on one machine
// (embedded adapters); operator/src/main.ts runs it as its own process.
export const OPERATOR_PACKAGE = '@sluice/operator';
export * from './controller/controller.js';
export * from './controller/events.js';
export * from './controller/informer.js';
export * from './controller/logger.js';
export * from './reconcile/actions.js';
export * from './runtime/process-runtime.js';
// The read side of the Deployment runtime: the gateway serves worker logs on Kubernetes with it.
export { DeploymentWorkers, type DeploymentWorkersOptions } from './runtime/deployment-workers.js';
export * from './work-queue.js';

/** The worker program (built), as the process runtime starts it: `node <WORKER_MAIN>`. */
export const WORKER_MAIN = fileURLToPath(new URL('./worker/main.js', import.meta.url));
// Connection helpers of the workers, reused by the gateway's pre-flight checks (spec 4.5).
export * from './worker/kafka/connection.js';
export { brokerRefusal, isOutboundRefusal, type BrokerOutbound } from './worker/kafka/broker-policy.js';
export * from './worker/kafka/fetch.js';
export * from './worker/postgres-connection.js';
export * from './worker/oracle-connection.js';
// The PostgreSQL capture's clean-up, used by the gateway when a source is deleted.
export { cdcNames, dropPostgresCdc, type PostgresSourceSettings } from './worker/sources/postgres-cdc.js';
// The slot's retained WAL, measured by the gateway while no worker reads it (paused sources).
export { measureSlotRetention, type SlotRetention } from './worker/sources/slot-retention.js';
// Backfills (run by the gateway): the target loop's write path and sinks, a
// stream's offset range, a source table's keyset pages (docs/data-plane.md "Backfills").
export { metricsOf as targetMetrics, positiveSetting, writeBatch } from './worker/target/target-loop.js';
export {
  prepareSubscription,
  type ConsumedMessage,
  type PreparedSubscription,
} from './worker/target/records.js';
export { openKafkaSink } from './worker/sinks/kafka.js';
export { openPostgresSink, openWebhookSink } from './worker/sinks/target-engines.js';
export { MissingSecretError, resolveSecrets } from './worker/secrets.js';
export { MetricsRegistry } from './worker/metrics.js';
export type { Sink } from './worker/contracts.js';
export type { WorkerContext } from './worker/engines.js';
export * from './worker/backfill/stream-range.js';
export * from './worker/backfill/table-pages.js';
export * from './worker/backfill/stream-start.js';
export * from './worker/backfill/group-read.js';
// The preview of a subscription (gateway): the target's mapping and the
// PostgreSQL target's DDL, by the very functions the worker runs.
export { mapMessage, type MappedMessage } from './worker/target/records.js';
export { castsByTable } from './worker/sinks/target-engines.js';
export {
  describeTable,
  planBatch,
  uniqueKeyProblem,
  type PostgresTargetSettings,
} from './worker/sinks/postgres.js';
export { ddlFor, typeConflicts, type TableRef, type TypeConflict } from './worker/sinks/postgres-ddl.js';
