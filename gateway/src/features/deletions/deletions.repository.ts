import { sql } from 'kysely';
import { DELETION_OBJECT_KINDS, type DeletionKind, type DeletionProgress } from '@sluice/shared/schemas';
import type { Db } from '../../db/database.js';
import { countAllOf, fetchPage, fullCount } from '../../db/paging.js';
import type { DeletionRow } from '../../db/schema.js';

// Deletions of teams and environments (migration 0014). A deletion is
// recorded in the transaction that removes the team or environment row, and
// is claimed through its lease, so one gateway replica works on it at a time
// and another takes it over once the lease lapsed (its gateway stopped).

/** The end of a lease of `ms` from now, on the database's clock (every replica reads the same one). */
const leaseEnd = (ms: number) => sql<Date>`now() + ${`${ms} milliseconds`}::interval`;
const lapsed = sql<Date>`now()`;

export const emptyProgress = (): DeletionProgress =>
  Object.fromEntries(DELETION_OBJECT_KINDS.map((k) => [k, { total: 0, deleted: 0 }])) as DeletionProgress;

/** Records a deletion of `teamIds` (caller's transaction, with the delete of the rows). */
export async function insertDeletion(
  db: Db,
  d: {
    kind: DeletionKind;
    target_id: string;
    target_name: string;
    env_id: string;
    team_ids: string[];
    requested_by: string | null;
  },
): Promise<string> {
  const row = await db
    .insertInto('deletions')
    .values({
      ...d,
      team_ids: JSON.stringify(d.team_ids),
      state: 'pending',
      progress: JSON.stringify(emptyProgress()),
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return row.id;
}

export function findDeletion(db: Db, id: string): Promise<DeletionRow | undefined> {
  return db.selectFrom('deletions').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Newest first. */
export async function listDeletions(
  db: Db,
  opts: { state?: DeletionRow['state']; offset: number; limit: number },
): Promise<{ rows: DeletionRow[]; total: number }> {
  let q = db.selectFrom('deletions');
  if (opts.state) q = q.where('state', '=', opts.state);
  return fetchPage(
    () =>
      q
        .selectAll()
        .select(fullCount)
        .orderBy('created_at', 'desc')
        .orderBy('id')
        .offset(opts.offset)
        .limit(opts.limit)
        .execute(),
    countAllOf(q),
    opts.offset,
  );
}

/** Unfinished deletions nobody holds (never claimed, or their gateway stopped): what a tick takes over. */
export async function unclaimedDeletions(db: Db, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('deletions')
    .select('id')
    .where('state', '!=', 'succeeded')
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', lapsed)]))
    .orderBy('created_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * Claims the deletion for `runner` until `leaseMs` from now, if it is
 * unfinished and unclaimed or its lease lapsed. Atomic: of two replicas, one
 * gets it. Counts the pass in `attempts`.
 */
export function claimDeletion(
  db: Db,
  id: string,
  runner: string,
  leaseMs: number,
): Promise<DeletionRow | undefined> {
  return db
    .updateTable('deletions')
    .set({
      runner,
      lease_until: leaseEnd(leaseMs),
      state: 'running',
      attempts: sql`attempts + 1`,
      started_at: sql`coalesce(started_at, now())`,
    })
    .where('id', '=', id)
    .where('state', '!=', 'succeeded')
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', lapsed)]))
    .returningAll()
    .executeTakeFirst();
}

/**
 * Where the deletion stands, written by the runner holding it (its lease
 * renewed with it); false once another runner holds it, and the caller stops.
 */
export async function recordStep(
  db: Db,
  id: string,
  runner: string,
  leaseMs: number,
  at: { step: string | null; progress: DeletionProgress; message: string | null },
): Promise<boolean> {
  const res = await db
    .updateTable('deletions')
    .set({
      step: at.step,
      progress: JSON.stringify(at.progress),
      message: at.message,
      lease_until: leaseEnd(leaseMs),
    })
    .where('id', '=', id)
    .where('runner', '=', runner)
    .where('state', '=', 'running')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Extends this runner's lease while a slow step runs; false once it lost the deletion. */
export async function renewLease(db: Db, id: string, runner: string, leaseMs: number): Promise<boolean> {
  const res = await db
    .updateTable('deletions')
    .set({ lease_until: leaseEnd(leaseMs) })
    .where('id', '=', id)
    .where('runner', '=', runner)
    .where('state', '=', 'running')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Done: nothing of the teams is left. */
export async function finishDeletion(
  db: Db,
  id: string,
  runner: string,
  progress: DeletionProgress,
): Promise<void> {
  await db
    .updateTable('deletions')
    .set({
      state: 'succeeded',
      step: null,
      message: null,
      progress: JSON.stringify(progress),
      finished_at: sql`now()`,
      lease_until: null,
    })
    .where('id', '=', id)
    .where('runner', '=', runner)
    .execute();
}

/** Lets the deletion go (a stop, or a pass that must wait): the next tick of any replica takes it again. */
export async function releaseDeletion(db: Db, id: string, runner: string): Promise<void> {
  await db
    .updateTable('deletions')
    .set({ lease_until: null })
    .where('id', '=', id)
    .where('runner', '=', runner)
    .execute();
}

/** The mirror tables of the objects a deletion removes, by progress key. */
const TABLES = {
  pipelines: 'mirror_pipelines',
  subscriptions: 'mirror_subscriptions',
  datamodels: 'mirror_datamodels',
  connectors: 'mirror_connectors',
  warehouses: 'mirror_warehouses',
} as const;

/**
 * The objects of `kind` the teams still have, by id: those not yet asked to
 * go (`pending`), or every one the cluster still holds (`all`, with those
 * waiting on a finalizer).
 */
export async function objectsOf(
  db: Db,
  kind: keyof typeof TABLES,
  teamIds: string[],
  which: 'pending' | 'all',
): Promise<string[]> {
  if (teamIds.length === 0) return [];
  let q = db
    .selectFrom(TABLES[kind])
    .select('id')
    .where('team_id', 'in', teamIds)
    .where('deleted', '=', false);
  if (which === 'pending') q = q.where('deleting', '=', false);
  const rows = await q.orderBy('id').execute();
  return rows.map((r) => r.id);
}

/** The teams' connectors whose workers are still meant to run. */
export async function runningConnectorsOf(db: Db, teamIds: string[]): Promise<string[]> {
  if (teamIds.length === 0) return [];
  const rows = await db
    .selectFrom('mirror_connectors')
    .select('id')
    .where('team_id', 'in', teamIds)
    .where('deleted', '=', false)
    .where('deleting', '=', false)
    .where('desired_state', '!=', 'stopped')
    .orderBy('id')
    .execute();
  return rows.map((r) => r.id);
}

/** How many of the teams' connectors still have a worker (running, starting or stopping). */
export async function connectorsStillRunning(db: Db, teamIds: string[]): Promise<number> {
  if (teamIds.length === 0) return 0;
  const row = await db
    .selectFrom('mirror_connectors')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('team_id', 'in', teamIds)
    .where('deleted', '=', false)
    .where('state', 'in', ['building', 'live', 'stopping'])
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** Asks the teams' active backfill runs to stop (the backfill runner ends them between two batches). */
export async function cancelBackfillsOf(db: Db, teamIds: string[]): Promise<void> {
  if (teamIds.length === 0) return;
  await db
    .updateTable('backfill_runs')
    .set({ cancel_requested: true })
    .where('team_id', 'in', teamIds)
    .where('state', 'in', ['pending', 'running'])
    .execute();
}

/** The teams of an environment (before it is deleted with them). */
export async function teamIdsOfEnv(db: Db, envId: string): Promise<string[]> {
  const rows = await db.selectFrom('teams').select('id').where('env_id', '=', envId).orderBy('id').execute();
  return rows.map((r) => r.id);
}

/** Every environment (an import compares them with its document). */
export function allEnvs(db: Db) {
  return db.selectFrom('envs').select(['id', 'name']).execute();
}

/** Every team, with its environment and name (an import compares them with its document). */
export function allTeams(db: Db) {
  return db.selectFrom('teams').select(['id', 'env_id', 'name']).execute();
}
