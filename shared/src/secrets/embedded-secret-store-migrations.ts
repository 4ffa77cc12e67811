import type { Migration } from 'kysely/migration';
import * as secrets from './migrations/2026-11-23-0004-secrets.js';
import * as secretGrants from './migrations/2026-11-26-0013-secret-grants.js';

/**
 * The embedded secret store's table in the service database, by migration
 * name: kept beside the adapter that uses it, run by the gateway among its
 * own migrations (Kysely orders them all by name). Each file is frozen once
 * released.
 */
export const EMBEDDED_SECRET_STORE_MIGRATIONS: Readonly<Record<string, Migration>> = {
  '2026-11-23-0004-secrets': secrets,
  '2026-11-26-0013-secret-grants': secretGrants,
};
