import type { Migration } from 'kysely/migration';
import * as cluster from './migrations/2026-11-23-0002-cluster.js';

/**
 * The embedded cluster's tables in the service database, by migration name:
 * kept beside the adapter that uses them, run by the gateway among its own
 * migrations (Kysely orders them all by name). Each file is frozen once
 * released.
 */
export const EMBEDDED_CLUSTER_MIGRATIONS: Readonly<Record<string, Migration>> = {
  '2026-11-23-0002-cluster': cluster,
};
