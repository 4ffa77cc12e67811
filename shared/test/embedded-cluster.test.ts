import { mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Kysely, PGliteDialect, PostgresDialect } from 'kysely';
import { Migrator } from 'kysely/migration';
import pg from 'pg';
import {
  EMBEDDED_CLUSTER_MIGRATIONS,
  EmbeddedCluster,
  InvalidError,
  type EmbeddedClusterOptions,
} from '@sluice/shared/cluster';
import { ExpiredError, type ClusterObject, type SluiceKind } from '@sluice/shared/ports';
import { describeClusterContract, sleep, startWatch } from '@sluice/testing/cluster-contract';
import { databaseKinds, type DbKind } from '@sluice/testing/postgres';

// The embedded cluster on its own tables (its migration, beside it), on both
// databases the service database may be: the cluster contract every adapter
// runs, then what only this adapter has (revisions, compaction, restarts).

/* eslint-disable @typescript-eslint/no-explicit-any -- the adapter takes any database that has its tables */
interface DatabaseHandle {
  db: Kysely<any>;
  close(): Promise<void>;
}

async function openDb(url: string | undefined, dataDir: string): Promise<DatabaseHandle> {
  if (url) {
    const pool = new pg.Pool({ connectionString: url, max: 10 });
    pool.on('error', () => undefined);
    const db = new Kysely<any>({ dialect: new PostgresDialect({ pool }) });
    return { db, close: () => db.destroy() };
  }
  const { PGlite } = await import('@electric-sql/pglite');
  const pglite = await PGlite.create(join(dataDir, 'pgdata'));
  const db = new Kysely<any>({ dialect: new PGliteDialect({ pglite }) });
  return { db, close: () => db.destroy() };
}
/* eslint-enable @typescript-eslint/no-explicit-any */

async function migrate(db: DatabaseHandle['db']): Promise<void> {
  const migrator = new Migrator({
    db,
    provider: { getMigrations: async () => ({ ...EMBEDDED_CLUSTER_MIGRATIONS }) },
  });
  const { error } = await migrator.migrateToLatest();
  if (error) throw error;
}

/**
 * A database of its own, migrated, that can be opened more than once: PGlite
 * on disk (so reopening it is a real restart) or a fresh database on the
 * PostgreSQL server of SLUICE_TEST_DATABASE_URL.
 */
interface TestDatabase {
  open(): Promise<DatabaseHandle>;
  drop(): Promise<void>;
}

async function createTestDatabase(kind: DbKind): Promise<TestDatabase> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-cluster-'));
  let url: string | undefined;
  let dbName: string | undefined;
  const admin = process.env.SLUICE_TEST_DATABASE_URL as string;
  if (kind === 'postgres') {
    dbName = `sluice_cluster_${randomUUID().replace(/-/g, '')}`;
    await adminQuery(admin, `create database ${dbName}`);
    const u = new URL(admin);
    u.pathname = `/${dbName}`;
    url = u.toString();
  }
  const first = await openDb(url, dataDir);
  await migrate(first.db);
  await first.close();
  return {
    open: () => openDb(url, dataDir),
    async drop() {
      if (dbName) await adminQuery(admin, `drop database if exists ${dbName} with (force)`);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

async function adminQuery(url: string, text: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(text);
  } finally {
    await client.end();
  }
}

const API_VERSION = 'sluice.dev/v1alpha1';
function object(ns: string, name: string, kind: SluiceKind = 'Connector'): ClusterObject {
  return { apiVersion: API_VERSION, kind, metadata: { name, namespace: ns }, spec: { name } };
}

for (const kind of databaseKinds()) {
  describeClusterContract(`embedded on ${kind}`, async () => {
    const testDb = await createTestDatabase(kind);
    const handle = await testDb.open();
    return {
      cluster: new EmbeddedCluster(handle.db),
      async teardown() {
        await handle.close();
        await testDb.drop();
      },
    };
  });

  describe(`embedded cluster on ${kind}`, () => {
    let testDb: TestDatabase;
    let handle: DatabaseHandle;
    const open = (options?: EmbeddedClusterOptions) => new EmbeddedCluster(handle.db, options);
    let nsCount = 0;
    const namespace = () => `emb${++nsCount}`;

    beforeAll(async () => {
      testDb = await createTestDatabase(kind);
      handle = await testDb.open();
    });
    afterAll(async () => {
      await handle?.close();
      await testDb?.drop();
    });

    it('is the embedded adapter and refuses invalid input with InvalidError', async () => {
      const cluster = open();
      expect(cluster.adapter).toBe('embedded');
      const ns = namespace();
      await expect(cluster.create(object(ns, 'Bad_Name'))).rejects.toBeInstanceOf(InvalidError);
      await expect(cluster.create({ ...object(ns, 'ok'), apiVersion: 'v1' })).rejects.toBeInstanceOf(
        InvalidError,
      );
      await expect(cluster.list('Connector', ns, 'a in (b)')).rejects.toBeInstanceOf(InvalidError);
      await expect(
        cluster.create({
          ...object(ns, 'ok'),
          metadata: { name: 'ok', namespace: ns, labels: { k: 'not valid!' } },
        }),
      ).rejects.toBeInstanceOf(InvalidError);
      const created = await cluster.create(object(ns, 'ok'));
      // An update must say which version it read (custom resources refuse unconditional updates).
      const { resourceVersion: _, ...unversioned } = created.metadata;
      await expect(cluster.update({ ...created, metadata: unversioned })).rejects.toBeInstanceOf(
        InvalidError,
      );
      await expect(
        cluster.watch('Connector', 'abc', () => undefined, AbortSignal.abort()),
      ).rejects.toBeInstanceOf(InvalidError);
    });

    it('uses dense revisions: a refused write leaves no gap', async () => {
      const cluster = open();
      const ns = namespace();
      const a = await cluster.create(object(ns, 'a'));
      await expect(cluster.create(object(ns, 'a'))).rejects.toThrow();
      await expect(
        cluster.update({ ...a, metadata: { ...a.metadata, resourceVersion: '1' } }),
      ).rejects.toThrow();
      const b = await cluster.create(object(ns, 'b'));
      expect(BigInt(b.metadata.resourceVersion as string)).toBe(
        BigInt(a.metadata.resourceVersion as string) + 1n,
      );
    });

    it('replays the whole history of a kind from version 0', async () => {
      const cluster = open();
      const ns = namespace();
      await cluster.create(object(ns, 'one', 'Warehouse'));
      await cluster.patchStatus('Warehouse', ns, 'one', { ready: true });
      await cluster.delete('Warehouse', ns, 'one');
      const watch = startWatch(cluster, 'Warehouse', '0', ns);
      await watch.until((events) => events.length === 3);
      await watch.stop();
      expect(watch.events.map((e) => e.type)).toEqual(['ADDED', 'MODIFIED', 'DELETED']);
    });

    it('compacts the history: a watch from below the horizon fails with ExpiredError before any event', async () => {
      const cluster = open({ retainEvents: 3, compactEvery: 0 });
      const ns = namespace();
      for (const n of ['a', 'b', 'c', 'd', 'e', 'f']) await cluster.create(object(ns, n, 'DataModel'));
      const { resourceVersion: head } = await cluster.list('DataModel', ns);
      const horizon = await cluster.compact();
      expect(BigInt(horizon)).toBe(BigInt(head) - 3n);

      let delivered = 0;
      const expired = cluster.watch(
        'DataModel',
        String(BigInt(horizon) - 1n),
        () => void delivered++,
        new AbortController().signal,
      );
      await expect(expired).rejects.toBeInstanceOf(ExpiredError);
      expect(delivered).toBe(0);

      // From the horizon itself nothing is missing: the last three events.
      const watch = startWatch(cluster, 'DataModel', horizon, ns);
      await watch.until((events) => events.length === 3);
      await watch.stop();
      expect(watch.events.map((e) => e.object.metadata.name)).toEqual(['d', 'e', 'f']);
      // And the usual recovery works: relist, then watch from the list's version.
      const relist = await cluster.list('DataModel', ns);
      expect(relist.items).toHaveLength(6);
      const after = startWatch(cluster, 'DataModel', relist.resourceVersion, ns);
      await cluster.create(object(ns, 'g', 'DataModel'));
      await after.until((events) => events.length === 1);
      await after.stop();
    });

    it('compacts inside writes every compactEvery revisions', async () => {
      const cluster = open({ retainEvents: 2, compactEvery: 1 });
      const ns = namespace();
      const a = await cluster.create(object(ns, 'a', 'Subscription'));
      await cluster.create(object(ns, 'b', 'Subscription'));
      await cluster.create(object(ns, 'c', 'Subscription'));
      // Two events kept (b and c): from a, nothing is missing; from before a, a is.
      const beforeA = String(BigInt(a.metadata.resourceVersion as string) - 1n);
      await expect(
        cluster.watch('Subscription', beforeA, () => undefined, new AbortController().signal),
      ).rejects.toBeInstanceOf(ExpiredError);
      const watch = startWatch(cluster, 'Subscription', a.metadata.resourceVersion as string, ns);
      await watch.until((events) => events.length === 2);
      await watch.stop();
      expect(watch.events.map((e) => e.object.metadata.name)).toEqual(['b', 'c']);
    });

    it('drops events older than retainMs', async () => {
      const cluster = open({ retainMs: 1, compactEvery: 0 });
      const ns = namespace();
      await cluster.create(object(ns, 'old', 'Pipeline'));
      await sleep(20);
      const { resourceVersion: head } = await cluster.list('Pipeline', ns);
      expect(await cluster.compact()).toBe(head);
      await expect(
        cluster.watch('Pipeline', String(BigInt(head) - 1n), () => undefined, new AbortController().signal),
      ).rejects.toBeInstanceOf(ExpiredError);
    });

    it('fails a watch that fell behind compaction instead of skipping events', async () => {
      const cluster = open({ retainEvents: 0, compactEvery: 0 });
      const ns = namespace();
      const start = await cluster.list('Connector', ns);
      for (const n of ['a', 'b']) await cluster.create(object(ns, n));
      let release: () => void = () => undefined;
      const gate = new Promise<void>((resolve) => (release = resolve));
      const seen: string[] = [];
      const watching = cluster.watch(
        'Connector',
        start.resourceVersion,
        async (e) => {
          if (e.object.metadata.namespace !== ns) return;
          await gate;
          seen.push(e.object.metadata.name);
        },
        new AbortController().signal,
      );
      const outcome = watching.then(
        () => 'resolved',
        (error: unknown) => error,
      );
      await sleep(100);
      // While the watcher is stuck in its handler, more happens and is compacted away.
      await cluster.create(object(ns, 'c'));
      await cluster.compact();
      release();
      expect(await outcome).toBeInstanceOf(ExpiredError);
      expect(seen).toEqual(['a', 'b']);
    });

    // PGlite is one connection in one process: a second handle on its files
    // would corrupt them, so only a PostgreSQL server has "other connections".
    (kind === 'postgres' ? it : it.skip)('picks up writes of other connections by polling', async () => {
      const other = await testDb.open();
      try {
        const watcher = open({ pollIntervalMs: 100 });
        const writer = new EmbeddedCluster(other.db);
        const ns = namespace();
        const start = await watcher.list('Connector', ns);
        const watch = startWatch(watcher, 'Connector', start.resourceVersion, ns);
        const t0 = Date.now();
        await writer.create(object(ns, 'remote'));
        await watch.until((events) => events.length === 1, 5000);
        expect(Date.now() - t0).toBeLessThan(2000);
        await watch.stop();
      } finally {
        await other.close();
      }
    });
  });

  describe(`embedded cluster restarts on ${kind}`, () => {
    let testDb: TestDatabase;
    beforeAll(async () => {
      testDb = await createTestDatabase(kind);
    });
    afterAll(async () => {
      await testDb?.drop();
    });

    it('continues from a stored resourceVersion after the process restarts', async () => {
      const ns = 'restart';
      let handle = await testDb.open();
      let cluster = new EmbeddedCluster(handle.db);
      for (const n of ['a', 'b']) await cluster.create(object(ns, n));
      const seen: string[] = [];
      const first = startWatch(cluster, 'Connector', '0', ns);
      await first.until((events) => events.length === 2);
      await first.stop();
      const stored = first.events.at(-1)?.object.metadata.resourceVersion as string;
      seen.push(...first.events.map((e) => e.object.metadata.name));
      // Written while the watcher was away.
      await cluster.create(object(ns, 'c'));
      await cluster.patch('Connector', ns, 'a', { spec: { changed: true } });
      await handle.close();

      handle = await testDb.open();
      try {
        cluster = new EmbeddedCluster(handle.db);
        const resumed = startWatch(cluster, 'Connector', stored, ns);
        await resumed.until((events) => events.length === 2);
        const d = await cluster.create(object(ns, 'd'));
        await resumed.until((events) => events.length === 3);
        await sleep(200);
        await resumed.stop();
        seen.push(...resumed.events.map((e) => `${e.type} ${e.object.metadata.name}`));
        expect(seen).toEqual(['a', 'b', 'ADDED c', 'MODIFIED a', 'ADDED d']);
        // The counter went on from where it was.
        expect(BigInt(d.metadata.resourceVersion as string)).toBe(BigInt(stored) + 3n);
        expect((await cluster.list('Connector', ns)).items.map((o) => o.metadata.name)).toEqual([
          'a',
          'b',
          'c',
          'd',
        ]);
      } finally {
        await handle.close();
      }
    });
  });
}
