import { sql, type Insertable } from 'kysely';
import { ACTIVE_BACKFILL_STATES, type BackfillState } from '@sluice/shared/schemas';
import type { Db } from '../../db/database.js';
import type {
  AutoBackfillsTable,
  BackfillItemRow,
  BackfillRunRow,
  BackfillItemsTable,
} from '../../db/schema.js';
import { isUniqueViolation } from '../../db/errors.js';

// Backfill runs and items (migration 0008): all SQL of the feature. Progress
// is written per batch; a run is claimed through its lease, so one gateway
// replica runs it at a time and another takes it over once the lease lapsed.

/** The end of a lease of `ms` from now, on the database's clock (every replica reads the same one). */
const leaseEnd = (ms: number) => sql<Date>`now() + ${`${ms} milliseconds`}::interval`;

/** Mirror rows a request names, for the validation of a backfill request. */
export function connectorsByIds(db: Db, ids: readonly string[]) {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('mirror_connectors')
    .select(['id', 'team_id', 'direction', 'connector_type', 'spec'])
    .where('deleting', '=', false)
    .where('id', 'in', ids)
    .execute();
}

export function datamodelsByIds(db: Db, ids: readonly string[]) {
  if (ids.length === 0) return Promise.resolve([]);
  return db
    .selectFrom('mirror_datamodels')
    .select(['id', 'team_id', 'connector_id', 'name', 'entry', 'enabled', 'spec'])
    .where('deleting', '=', false)
    .where('id', 'in', ids)
    .execute();
}

/** The enabled data models of the sources, oldest first. */
export function enabledDatamodelsOf(db: Db, connectorIds: readonly string[]) {
  return db
    .selectFrom('mirror_datamodels')
    .select(['id', 'team_id', 'connector_id', 'name', 'entry', 'enabled', 'spec'])
    .where('deleting', '=', false)
    .where('enabled', '=', true)
    .where('connector_id', 'in', connectorIds)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
}

/** Enabled subscriptions of the data models (to the targets, when given), oldest first. */
export function subscriptionsOf(db: Db, datamodelIds: readonly string[], targetIds: readonly string[]) {
  let q = db
    .selectFrom('mirror_subscriptions')
    .select(['id', 'datamodel_id', 'target_connector_id', 'spec'])
    .where('deleting', '=', false)
    .where('enabled', '=', true)
    .where('datamodel_id', 'in', datamodelIds);
  if (targetIds.length > 0) q = q.where('target_connector_id', 'in', targetIds);
  return q.orderBy('created_at').orderBy('id').execute();
}

export type NewItem = Omit<
  Insertable<BackfillItemsTable>,
  'run_id' | 'position' | 'messages_replayed' | 'error'
>;

export interface NewRun {
  team_id: string;
  /** The user who triggered it; null for a run the gateway started itself (backfills.auto.ts). */
  created_by: string | null;
  source_connector_ids: string[];
  datamodel_ids: string[];
  target_connector_ids: string[];
}

/**
 * Records a run and its items, and takes its sources (one transaction); with
 * `decided`, also the automatic decision that starts it. Returns null when one
 * of the sources is held by an active run, or the subscription was decided
 * meanwhile (by another replica).
 */
export async function insertRun(
  db: Db,
  run: NewRun,
  items: NewItem[],
  decided?: { subscription_id: string; reason: string },
): Promise<string | null> {
  try {
    return await db.transaction().execute(async (trx) => {
      const { id } = await trx
        .insertInto('backfill_runs')
        .values({
          team_id: run.team_id,
          created_by: run.created_by,
          state: 'pending',
          source_connector_ids: JSON.stringify(run.source_connector_ids),
          datamodel_ids: JSON.stringify(run.datamodel_ids),
          target_connector_ids: JSON.stringify(run.target_connector_ids),
          error: null,
        })
        .returning('id')
        .executeTakeFirstOrThrow();
      await trx
        .insertInto('backfill_active_sources')
        .values(run.source_connector_ids.map((s) => ({ source_connector_id: s, run_id: id })))
        .execute();
      await trx
        .insertInto('backfill_items')
        .values(items.map((item, position) => ({ ...item, run_id: id, position, error: null })))
        .execute();
      if (decided) {
        const row = { ...decided, decision: 'started' as const, run_id: id };
        const wrote = await decide(trx, row).returning('subscription_id').executeTakeFirst();
        if (!wrote) throw new DecidedElsewhere();
      }
      return id;
    });
  } catch (e) {
    if (isUniqueViolation(e) || e instanceof DecidedElsewhere) return null;
    throw e;
  }
}

/** Rolls back a run whose subscription another replica decided in the meantime. */
class DecidedElsewhere extends Error {}

/**
 * Records a decision: over nothing, or over one taken before the
 * subscription's `backfill` was last turned on (mirror `backfill_on_at`); a
 * decision taken since is kept, and the statement then writes no row.
 */
const decide = (db: Db, row: Insertable<AutoBackfillsTable>) =>
  db
    .insertInto('auto_backfills')
    .values(row)
    .onConflict((oc) =>
      oc
        .column('subscription_id')
        .doUpdateSet({
          decision: row.decision,
          reason: row.reason,
          run_id: row.run_id,
          decided_at: sql`now()`,
        })
        .where(
          'auto_backfills.decided_at',
          '<',
          sql<Date>`(select backfill_on_at from mirror_subscriptions where id = excluded.subscription_id)`,
        ),
    );

export function findRun(db: Db, id: string): Promise<BackfillRunRow | undefined> {
  return db.selectFrom('backfill_runs').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The latest run that replays `sourceId`. */
export async function latestRunOf(db: Db, sourceId: string): Promise<BackfillRunRow | undefined> {
  return db
    .selectFrom('backfill_runs')
    .selectAll()
    .where('id', 'in', (q) =>
      q.selectFrom('backfill_items').select('run_id').where('source_connector_id', '=', sourceId),
    )
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
}

export function itemsOf(db: Db, runId: string): Promise<BackfillItemRow[]> {
  return db
    .selectFrom('backfill_items')
    .selectAll()
    .where('run_id', '=', runId)
    .orderBy('position')
    .execute();
}

/**
 * Claims the run for `runner` until `leaseMs` from now, if it is active and
 * unclaimed or its lease lapsed (its gateway stopped). Atomic: of two
 * replicas, one gets it.
 */
export async function claimRun(db: Db, id: string, runner: string, leaseMs: number): Promise<boolean> {
  const res = await db
    .updateTable('backfill_runs')
    .set({
      runner,
      lease_until: leaseEnd(leaseMs),
      state: 'running',
      started_at: sql`coalesce(started_at, now())`,
    })
    .where('id', '=', id)
    .where('state', 'in', [...ACTIVE_BACKFILL_STATES])
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', sql<Date>`now()`)]))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Active runs nobody holds (never claimed, or their gateway stopped): what a resume tick takes over. */
export async function unclaimedRuns(db: Db, limit: number): Promise<string[]> {
  const rows = await db
    .selectFrom('backfill_runs')
    .select('id')
    .where('state', 'in', [...ACTIVE_BACKFILL_STATES])
    .where((eb) => eb.or([eb('lease_until', 'is', null), eb('lease_until', '<', sql<Date>`now()`)]))
    .orderBy('created_at')
    .limit(limit)
    .execute();
  return rows.map((r) => r.id);
}

/**
 * After a batch: the item's progress and count, and the run's lease renewed,
 * in one transaction. Returns whether a cancel was asked meanwhile, or null
 * when the run is no longer this runner's (another replica took it over).
 */
export async function recordProgress(
  db: Db,
  runId: string,
  position: number,
  runner: string,
  leaseMs: number,
  progress: unknown,
  added: number,
): Promise<{ cancel: boolean } | null> {
  return db.transaction().execute(async (trx) => {
    const run = await trx
      .updateTable('backfill_runs')
      .set({ lease_until: leaseEnd(leaseMs) })
      .where('id', '=', runId)
      .where('runner', '=', runner)
      .where('state', '=', 'running')
      .returning('cancel_requested')
      .executeTakeFirst();
    if (!run) return null;
    await trx
      .updateTable('backfill_items')
      .set({
        progress: JSON.stringify(progress),
        state: 'running',
        messages_replayed: sql`messages_replayed + ${added}`,
      })
      .where('run_id', '=', runId)
      .where('position', '=', position)
      .execute();
    return { cancel: run.cancel_requested };
  });
}

export function setItemState(
  db: Db,
  runId: string,
  position: number,
  state: BackfillState,
  error: string | null = null,
) {
  return db
    .updateTable('backfill_items')
    .set({ state, error })
    .where('run_id', '=', runId)
    .where('position', '=', position)
    .execute();
}

/**
 * Ends a run (and the items it had not finished) and releases its sources,
 * in one transaction; only while it is still active.
 */
export async function finishRun(
  db: Db,
  runId: string,
  state: Exclude<BackfillState, 'pending' | 'running'>,
  error: string | null,
): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    const res = await trx
      .updateTable('backfill_runs')
      .set({ state, error, finished_at: sql`now()`, lease_until: null })
      .where('id', '=', runId)
      .where('state', 'in', [...ACTIVE_BACKFILL_STATES])
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) !== 1) return false;
    await trx
      .updateTable('backfill_items')
      // Items the run did not reach (after a failure or a cancel) read `cancelled`: never attempted.
      .set({ state: state === 'succeeded' ? 'succeeded' : 'cancelled' })
      .where('run_id', '=', runId)
      .where('state', 'in', [...ACTIVE_BACKFILL_STATES])
      .execute();
    await trx.deleteFrom('backfill_active_sources').where('run_id', '=', runId).execute();
    return true;
  });
}

/** Asks a run to stop; returns its state after the request. */
export async function requestCancel(db: Db, runId: string): Promise<void> {
  await db
    .updateTable('backfill_runs')
    .set({ cancel_requested: true })
    .where('id', '=', runId)
    .where('state', 'in', [...ACTIVE_BACKFILL_STATES])
    .execute();
}

/** Extends this runner's lease (heartbeat while a batch is being written); false once it lost the run. */
export async function renewLease(db: Db, runId: string, runner: string, leaseMs: number): Promise<boolean> {
  const res = await db
    .updateTable('backfill_runs')
    .set({ lease_until: leaseEnd(leaseMs) })
    .where('id', '=', runId)
    .where('runner', '=', runner)
    .where('state', '=', 'running')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) === 1;
}

/** Lets go of a run this runner stops holding (gateway shutdown): another replica may resume it at once. */
export async function releaseRun(db: Db, runId: string, runner: string): Promise<void> {
  await db
    .updateTable('backfill_runs')
    .set({ lease_until: null })
    .where('id', '=', runId)
    .where('runner', '=', runner)
    .execute();
}

/**
 * Subscriptions with `backfill` on, with their data model and source, none
 * being deleted: where the automatic decisions start from.
 */
const backfillSubscriptions = (db: Db) =>
  db
    .selectFrom('mirror_subscriptions as s')
    .innerJoin('mirror_datamodels as d', 'd.id', 's.datamodel_id')
    .innerJoin('mirror_connectors as src', 'src.id', 'd.connector_id')
    .select([
      's.id as subscription_id',
      'd.id as datamodel_id',
      'd.spec as datamodel_spec',
      'src.id as source_id',
      'src.connector_type as source_type',
      'src.spec as source_spec',
    ])
    .where('s.deleting', '=', false)
    .where(sql<boolean>`(s.spec->>'backfill')::boolean is true`)
    .where('d.deleting', '=', false)
    .where('src.deleting', '=', false);

/** The oldest time the age bound `maxAgeMs` still admits, on the database's clock. */
const admittedSince = (maxAgeMs: number) => sql<Date>`now() - ${`${maxAgeMs} milliseconds`}::interval`;

/**
 * Subscriptions with `backfill`, created within `maxAgeMs`, not decided yet,
 * with their data model and connectors: those of a source type that is not
 * re-snapshotted (decided at once), and the others once they are enabled and
 * both connectors live. The ones still waiting are not read, so that however
 * many wait, the `limit` goes to those that can be decided.
 */
export function undecidedBackfillSubscriptions(
  db: Db,
  o: { maxAgeMs: number; snapshotSourceTypes: readonly string[]; limit: number },
) {
  const since = admittedSince(o.maxAgeMs);
  return (
    backfillSubscriptions(db)
      .innerJoin('mirror_connectors as tgt', 'tgt.id', 's.target_connector_id')
      .leftJoin('auto_backfills as a', 'a.subscription_id', 's.id')
      .select([
        's.namespace',
        's.team_id',
        's.enabled',
        'd.enabled as datamodel_enabled',
        'src.state as source_state',
        'tgt.id as target_id',
        'tgt.connector_type as target_type',
        'tgt.state as target_state',
      ])
      // Turned on later for a consumer that had read the stream: replayed. One
      // that had not reads it from the earliest offset: decided as a new one.
      .select(sql<boolean>`s.backfill_on_consumed is true`.as('turned_on_later'))
      // New (no decision yet), or `backfill` turned on since the last decision; within the age
      // bound of the creation, or of the switch.
      .where((eb) =>
        eb.or([
          eb.and([
            eb('s.backfill_on_at', 'is', null),
            eb('a.subscription_id', 'is', null),
            eb('s.created_at', '>', since),
          ]),
          eb.and([
            eb('s.backfill_on_at', '>', since),
            // Once the tick has looked at the consumer's offsets (uncheckedSwitches).
            eb('s.backfill_on_consumed', 'is not', null),
            eb.or([eb('a.subscription_id', 'is', null), eb('a.decided_at', '<', eb.ref('s.backfill_on_at'))]),
          ]),
        ]),
      )
      .where('tgt.deleting', '=', false)
      .where((eb) =>
        eb.or([
          // Skipped at once (nothing to wait for), unless `backfill` was turned on later.
          ...(o.snapshotSourceTypes.length > 0
            ? [
                eb.and([
                  eb.or([eb('s.backfill_on_at', 'is', null), eb('s.backfill_on_consumed', '=', false)]),
                  eb('src.connector_type', 'not in', [...o.snapshotSourceTypes]),
                ]),
              ]
            : []),
          eb.and([
            eb('s.enabled', '=', true),
            eb('d.enabled', '=', true),
            eb('src.state', '=', 'live'),
            eb('tgt.state', '=', 'live'),
          ]),
        ]),
      )
      .orderBy('s.created_at')
      .limit(o.limit)
      .execute()
  );
}

/**
 * Subscriptions whose `backfill` was turned on later, within `maxAgeMs` of the
 * switch, whose consumer's offsets nobody has looked at since: with what
 * names their stream and consumer group.
 */
export function uncheckedSwitches(db: Db, o: { maxAgeMs: number; limit: number }) {
  return (
    backfillSubscriptions(db)
      .select('s.spec as subscription_spec')
      // The switch's time as the database holds it (microseconds: a JS Date would drop them).
      .select(sql<string>`s.backfill_on_at::text`.as('switched_at'))
      .where('s.backfill_on_consumed', 'is', null)
      .where('s.backfill_on_at', '>', admittedSince(o.maxAgeMs))
      .orderBy('s.backfill_on_at')
      .limit(o.limit)
      .execute()
  );
}

/** Records that a subscription needs no automatic run (another replica may have decided first: kept). */
export async function recordSkipped(db: Db, subscriptionId: string, reason: string): Promise<boolean> {
  const wrote = await decide(db, {
    subscription_id: subscriptionId,
    decision: 'skipped',
    reason,
    run_id: null,
  })
    .returning('subscription_id')
    .executeTakeFirst();
  return wrote !== undefined;
}

/** The decision taken for a subscription, if any. */
export function autoDecisionOf(db: Db, subscriptionId: string) {
  return db
    .selectFrom('auto_backfills')
    .selectAll()
    .where('subscription_id', '=', subscriptionId)
    .executeTakeFirst();
}
