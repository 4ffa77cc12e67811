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
export * from './work-queue.js';

/** The worker program (built), as the process runtime starts it: `node <WORKER_MAIN>`. */
export const WORKER_MAIN = fileURLToPath(new URL('./worker/main.js', import.meta.url));
// Connection helpers of the workers, reused by the gateway's pre-flight checks (spec 4.5).
export * from './worker/kafka/connection.js';
export * from './worker/postgres-connection.js';
// The PostgreSQL capture's clean-up, used by the gateway when a source is deleted.
export { cdcNames, dropPostgresCdc, type PostgresSourceSettings } from './worker/sources/postgres-cdc.js';
