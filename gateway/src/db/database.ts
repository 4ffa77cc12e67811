import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { isMainThread } from 'node:worker_threads';
import { Kysely, PGliteDialect, PostgresDialect } from 'kysely';
import { Migrator, type Migration } from 'kysely/migration';
import pg from 'pg';
import { EMBEDDED_CLUSTER_MIGRATIONS } from '@sluice/shared/cluster';
import { EMBEDDED_SECRET_STORE_MIGRATIONS } from '@sluice/shared/secrets';
import * as identity from './migrations/2026-11-23-0001-identity.js';
import * as schemas from './migrations/2026-11-23-0003-schemas.js';
import * as mirror from './migrations/2026-11-23-0005-mirror.js';
import * as warehouseTasks from './migrations/2026-11-23-0006-warehouse-tasks.js';
import * as mirrorNamespaces from './migrations/2026-11-23-0007-mirror-namespaces.js';
import * as backfills from './migrations/2026-11-23-0008-backfills.js';
import * as autoBackfills from './migrations/2026-11-24-0009-auto-backfills.js';
import * as backfillTurnedOn from './migrations/2026-11-24-0010-backfill-turned-on.js';
import * as backfillOnConsumed from './migrations/2026-11-24-0011-backfill-on-consumed.js';
import * as keptSession from './migrations/2026-11-26-0012-kept-session.js';
import * as deletions from './migrations/2026-11-26-0014-deletions.js';
import type { Database } from './schema.js';

export type Db = Kysely<Database>;

export interface DatabaseHandle {
  db: Db;
  kind: 'postgres' | 'pglite';
  close(): Promise<void>;
}

// Listed here, in order, with those of the embedded adapters (beside them in
// shared); each file is frozen once released.
const migrations: Record<string, Migration> = {
  '2026-11-23-0001-identity': identity,
  ...EMBEDDED_CLUSTER_MIGRATIONS,
  '2026-11-23-0003-schemas': schemas,
  ...EMBEDDED_SECRET_STORE_MIGRATIONS,
  '2026-11-23-0005-mirror': mirror,
  '2026-11-23-0006-warehouse-tasks': warehouseTasks,
  '2026-11-23-0007-mirror-namespaces': mirrorNamespaces,
  '2026-11-23-0008-backfills': backfills,
  '2026-11-24-0009-auto-backfills': autoBackfills,
  '2026-11-24-0010-backfill-turned-on': backfillTurnedOn,
  '2026-11-24-0011-backfill-on-consumed': backfillOnConsumed,
  '2026-11-26-0012-kept-session': keptSession,
  '2026-11-26-0014-deletions': deletions,
};

/**
 * Opens the service database: the PostgreSQL server `url` names, or else an
 * embedded PGlite (PostgreSQL in WASM) whose files live under `dataDir`
 * (`memory://` keeps it in memory, for tests).
 */
export async function openDatabase(opts: {
  url?: string;
  dataDir: string;
  pgliteDir?: string;
  /** A PGlite data directory dumped earlier (`dumpDataDir`) to start from instead of a new initdb (tests). */
  pgliteLoad?: Blob;
}): Promise<DatabaseHandle> {
  if (opts.url) {
    const pool = new pg.Pool({ connectionString: opts.url, max: 20 });
    // An idle client that errors (server restart) must not crash the process.
    pool.on('error', () => undefined);
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
    return { db, kind: 'postgres', close: () => db.destroy() };
  }
  const { PGlite } = await import('@electric-sql/pglite');
  const dir = opts.pgliteDir ?? join(opts.dataDir, 'pgdata');
  const onDisk = !dir.startsWith('memory://');
  if (onDisk) {
    // The database holds password hashes and sealed secrets: owner-only, like
    // a PostgreSQL server's data directory. PGlite creates files with the
    // process's umask (and its first files, unpacked at initdb, 0666): the
    // umask covers the files it creates from now on, the walk those before.
    if (isMainThread) process.umask(0o077);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!opts.pgliteDir) chmodSync(opts.dataDir, 0o700);
  }
  const pglite = await PGlite.create(dir, opts.pgliteLoad ? { loadDataDir: opts.pgliteLoad } : {});
  if (onDisk) ownerOnly(dir);
  const db = new Kysely<Database>({ dialect: new PGliteDialect({ pglite }) });
  return { db, kind: 'pglite', close: () => db.destroy() };
}

/** Makes `dir` and everything under it owner-only (directories 0700, files 0600); links are left alone. */
export function ownerOnly(dir: string): void {
  const st = lstatSync(dir);
  if (st.isSymbolicLink()) return;
  if (!st.isDirectory()) {
    if ((st.mode & 0o777) !== 0o600) chmodSync(dir, 0o600);
    return;
  }
  if ((st.mode & 0o777) !== 0o700) chmodSync(dir, 0o700);
  for (const name of readdirSync(dir)) ownerOnly(join(dir, name));
}

export async function migrateToLatest(db: Db): Promise<void> {
  const migrator = new Migrator({ db, provider: { getMigrations: async () => migrations } });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === 'Error');
  if (error || failed) {
    throw new Error(`Database migration ${failed?.migrationName ?? ''} failed`, { cause: error });
  }
}
