import { describe, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';

// Tests against the real PostgreSQL server of scripts/with-postgres.sh
// (wal_level=logical): each test file works in a database of its own, created
// here and dropped after, so files can run side by side.

const SKIP_REASON = 'skipped: no PostgreSQL server; run under scripts/with-postgres.sh';

export function testPostgresUrl(): string | undefined {
  return process.env.SLUICE_TEST_DATABASE_URL || undefined;
}

/**
 * `describe` for tests that need the server. Without one, the block is
 * reported as skipped with the reason in its title, unless CI or
 * SLUICE_REQUIRE_POSTGRES=1, in which case it fails.
 */
export function describeWithPostgres(name: string, fn: () => void): void {
  if (testPostgresUrl()) {
    describe(name, fn);
  } else if (process.env.CI || process.env.SLUICE_REQUIRE_POSTGRES === '1') {
    describe(name, () => {
      it('needs a PostgreSQL server', () => {
        throw new Error('SLUICE_TEST_DATABASE_URL is not set: run the tests under scripts/with-postgres.sh');
      });
    });
  } else {
    console.warn(`${name}: ${SKIP_REASON}`);
    describe.skip(`${name} (${SKIP_REASON})`, fn);
  }
}

/** Connection settings in the shape the Postgres connectors take (password resolved). */
export interface ScratchSettings {
  host: string;
  port: number;
  database: string;
  user: string;
  password: string;
  ssl_mode: 'disable';
}

export interface ScratchDatabase {
  settings: ScratchSettings;
  /** A connected client on the scratch database (ended by `drop`). */
  client: pg.Client;
  /** Drops the database, and first the replication slots it still holds. */
  drop(): Promise<void>;
}

/** A new, empty database on the test server. */
export async function createScratchDatabase(prefix: string): Promise<ScratchDatabase> {
  const url = new URL(testPostgresUrl() as string);
  const database = `${prefix}_${randomUUID().replace(/-/g, '').slice(0, 12)}`;
  const admin = new pg.Client({ connectionString: url.toString() });
  await admin.connect();
  await admin.query(`create database ${database}`);
  const settings: ScratchSettings = {
    host: url.hostname,
    port: Number(url.port || 5432),
    database,
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    ssl_mode: 'disable',
  };
  const client = new pg.Client({ ...settings, ssl: false });
  await client.connect();
  return {
    settings,
    client,
    async drop() {
      await client.end().catch(() => undefined);
      // A database holding replication slots cannot be dropped: the slots
      // captures left behind (their workers are gone by now) go first.
      await admin.query(
        'select pg_drop_replication_slot(slot_name) from pg_replication_slots where database = $1 and not active',
        [database],
      );
      await admin.query(`drop database if exists ${database} with (force)`);
      await admin.end();
    },
  };
}

/**
 * The databases a service-database test runs on: PGlite always, and the
 * PostgreSQL server named by SLUICE_TEST_DATABASE_URL when set (`make test`
 * starts one).
 */
export type DbKind = 'pglite' | 'postgres';

export function databaseKinds(): DbKind[] {
  if (process.env.SLUICE_TEST_DATABASE_URL) return ['pglite', 'postgres'];
  if (process.env.CI) throw new Error('SLUICE_TEST_DATABASE_URL is not set: run the suite with `make test`');
  console.warn(
    'SLUICE_TEST_DATABASE_URL is not set: PostgreSQL-server variants are SKIPPED (run `make test`)',
  );
  return ['pglite'];
}
