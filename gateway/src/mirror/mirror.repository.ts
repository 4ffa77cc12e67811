import { sql, type Kysely } from 'kysely';
import type { ClusterObject, SluiceKind } from '@sluice/shared/ports';
import type { Db } from '../db/database.js';
import { MIRROR_TABLES, project, type MirrorTable } from './projections.js';

// All SQL of the mirror's writes. Every write is guarded by resource_version,
// so the gateway's write-through and the watch-driven sync may deliver the
// same object in any order and the row still ends at the newest version.

// The mirror tables share their common columns; Kysely cannot type a table
// chosen at run time, so these statements go through one untyped handle.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
const untyped = (db: Db) => db as unknown as Kysely<any>;

/**
 * Inserts or replaces the row of `object` unless the mirror already holds a
 * newer version (or a tombstone newer than it), or a live object of another
 * namespace under the same id (the first one keeps it: docs/architecture.md,
 * "Ids across namespaces"; the sync reports the clash). Whether it wrote.
 */
export async function upsertObject(db: Db, object: ClusterObject, now = new Date()): Promise<boolean> {
  const { table, values } = project(object, now);
  const col = (c: string) => sql.ref(`${table}.${c}`);
  const updates: Record<string, unknown> = {};
  for (const column of Object.keys(values)) {
    if (column === 'id') continue;
    updates[column] = sql.ref(`excluded.${column}`);
  }
  // Over a tombstone, a newer version is the object created again under the
  // same name (`kubectl delete` then `kubectl apply` of one manifest): a new
  // life, so nothing carries over. Otherwise, once deleting, always deleting,
  // and the row keeps the time it was created.
  updates.deleting = sql`case when ${col('deleted')} then excluded.deleting
    else ${col('deleting')} or excluded.deleting end`;
  updates.created_at = sql`case when ${col('deleted')} then excluded.created_at else ${col('created_at')} end`;
  // updated_at moves with spec changes (generation), not with status reports.
  updates.updated_at = sql`case when ${col('deleted')} or ${col('generation')} <> excluded.generation
    then excluded.updated_at else ${col('updated_at')} end`;
  if (table === MIRROR_TABLES.Subscription) {
    // `backfill` switched on after creation, by the API or kubectl: the gateway
    // replays the subscription (features/backfills/backfills.auto.ts). The
    // database's clock, as the decisions compared with it (auto_backfills).
    const switchedOn = sql`(${col('deleted')} or ((excluded.spec->>'backfill')::boolean is true
      and (${col('spec')}->>'backfill')::boolean is not true))`;
    updates.backfill_on_at = sql`case when ${col('deleted')} then null
      when ${switchedOn} then now() else ${col('backfill_on_at')} end`;
    // Whether its consumer had read the stream by then is looked up afresh.
    updates.backfill_on_consumed = sql`case when ${switchedOn} then null
      else ${col('backfill_on_consumed')} end`;
  }
  const [result] = await untyped(db)
    .insertInto(table)
    .values(values)
    .onConflict((oc) =>
      // Versions order the writes of one object; the tombstone of another
      // namespace's object is no version of this one: it takes the id over.
      oc.column('id').doUpdateSet(updates).where(sql<boolean>`(${col('namespace')} = excluded.namespace
          and ${col('resource_version')} < excluded.resource_version)
          or (${col('namespace')} <> excluded.namespace and ${col('deleted')})`),
    )
    .execute();
  return (result?.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/** The gateway deleted the object: hide it at once (its finalizers may keep it in the cluster a while). */
export async function markDeleting(db: Db, kind: SluiceKind, id: string): Promise<void> {
  await untyped(db).updateTable(MIRROR_TABLES[kind]).set({ deleting: true }).where('id', '=', id).execute();
}

/**
 * `object` is gone from the cluster as of `resourceVersion` (that of its
 * DELETED event, or any version after its last one): keep a tombstone there,
 * so that no older version of it (a late write-through) brings it back, while
 * the object created again under the same name, which has a later version,
 * does. Inserted when the mirror never had the object, for the same reason.
 */
export async function tombstone(
  db: Db,
  object: ClusterObject,
  resourceVersion = object.metadata.resourceVersion ?? '0',
  now = new Date(),
): Promise<void> {
  const { table, values } = project(object, now);
  await untyped(db)
    .insertInto(table)
    .values({ ...values, deleted: true, deleting: true, resource_version: resourceVersion, updated_at: now })
    .onConflict((oc) =>
      oc
        .column('id')
        .doUpdateSet({
          deleted: true,
          deleting: true,
          resource_version: sql.ref('excluded.resource_version'),
          updated_at: sql.ref('excluded.updated_at'),
        })
        .where(sql.ref(`${table}.resource_version`), '<', sql.ref('excluded.resource_version'))
        // The deletion of an object whose id another namespace's object holds is not that one's.
        .where(sql.ref(`${table}.namespace`), '=', sql.ref('excluded.namespace')),
    )
    .execute();
}

/** The object is gone and the version of its deletion unknown: mark its row, if any, deleted. */
export async function markDeleted(db: Db, kind: SluiceKind, id: string): Promise<void> {
  await untyped(db)
    .updateTable(MIRROR_TABLES[kind])
    .set({ deleted: true, deleting: true, updated_at: new Date() })
    .where('id', '=', id)
    .where('deleted', '=', false)
    .execute();
}

/**
 * After a relist: tombstone, at the list's version, every live row of
 * `namespace` (undefined: of every namespace) the list did not contain,
 * unless it was written after the list was taken (a write-through that raced
 * the list).
 */
export async function tombstoneMissing(
  db: Db,
  kind: SluiceKind,
  namespace: string | undefined,
  present: string[],
  listedAt: string,
): Promise<number> {
  let q = untyped(db)
    .updateTable(MIRROR_TABLES[kind])
    .set({ deleted: true, deleting: true, resource_version: listedAt, updated_at: new Date() })
    .where('deleted', '=', false)
    .where('resource_version', '<=', listedAt);
  if (namespace !== undefined) q = q.where('namespace', '=', namespace);
  if (present.length > 0) q = q.where('id', 'not in', present);
  const result = await q.executeTakeFirst();
  return Number(result.numUpdatedRows);
}

/** Where each row of `namespace` (undefined: every namespace) stands (MirrorSync.settled). */
export async function rowVersions(
  db: Db,
  kind: SluiceKind,
  namespace: string | undefined,
): Promise<{ id: string; resourceVersion: bigint; deleted: boolean }[]> {
  let q = untyped(db)
    .selectFrom(MIRROR_TABLES[kind])
    .select(['id', sql<string>`resource_version::text`.as('rv'), 'deleted']);
  if (namespace !== undefined) q = q.where('namespace', '=', namespace);
  const rows = (await q.execute()) as { id: string; rv: string; deleted: boolean }[];
  return rows.map((r) => ({ id: r.id, resourceVersion: BigInt(r.rv), deleted: r.deleted }));
}

/** Tombstones go after an hour: by then the sync has long passed any older event of their object. */
export async function dropTombstones(db: Db, kind: SluiceKind): Promise<void> {
  await untyped(db)
    .deleteFrom(MIRROR_TABLES[kind])
    .where('deleted', '=', true)
    .where('updated_at', '<', new Date(Date.now() - 3600_000))
    .execute();
}

/**
 * The namespace of the object the mirror holds under `id` (a tombstone's
 * too), or undefined: where the gateway reads and writes it.
 */
export async function rowNamespace(
  db: Db,
  kind: SluiceKind,
  id: string,
): Promise<{ namespace: string; deleted: boolean } | undefined> {
  const row = (await untyped(db)
    .selectFrom(MIRROR_TABLES[kind])
    .select(['namespace', 'deleted'])
    .where('id', '=', id)
    .executeTakeFirst()) as { namespace: string; deleted: boolean } | undefined;
  return row;
}

/**
 * Records whether the consumer had read the stream at the switch of
 * `switchedAt` (as `uncheckedSwitches` read it). The first look wins: another
 * replica's, later, may already see offsets the worker committed since. A
 * switch since keeps its own, unlooked-at answer. False: nothing written.
 * The automatic backfills write it; it sits beside the switch the projection
 * keeps (`backfill_on_at`), not under the resource version guard.
 */
export async function recordConsumedAtSwitch(
  db: Db,
  subscriptionId: string,
  switchedAt: string,
  consumed: boolean,
): Promise<boolean> {
  const { numUpdatedRows } = await db
    .updateTable('mirror_subscriptions')
    .set({ backfill_on_consumed: consumed })
    .where('id', '=', subscriptionId)
    .where('backfill_on_consumed', 'is', null)
    .where(sql<boolean>`backfill_on_at = ${switchedAt}::timestamptz`)
    .executeTakeFirst();
  return numUpdatedRows > 0n;
}

/** The cursor key of the loop that watches every namespace (cluster scope): no namespace is named `*`. */
export const ALL_NAMESPACES = '*';

/** Where the loop of (`kind`, `namespace`; `*`: all) stands: the resourceVersion to watch from. */
export async function readCursor(db: Db, kind: SluiceKind, namespace: string): Promise<string | undefined> {
  const row = await db
    .selectFrom('mirror_cursors')
    .select('resource_version')
    .where('kind', '=', kind)
    .where('namespace', '=', namespace)
    .executeTakeFirst();
  return row ? String(row.resource_version) : undefined;
}

export async function writeCursor(
  db: Db,
  kind: SluiceKind,
  namespace: string,
  resourceVersion: string,
): Promise<void> {
  await db
    .insertInto('mirror_cursors')
    .values({ kind, namespace, resource_version: resourceVersion, updated_at: new Date() })
    .onConflict((oc) =>
      oc
        .columns(['kind', 'namespace'])
        .doUpdateSet({ resource_version: resourceVersion, updated_at: new Date() }),
    )
    .execute();
}

export type { MirrorTable };
