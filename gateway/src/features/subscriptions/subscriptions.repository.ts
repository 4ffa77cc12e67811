import type { Principal } from '../../auth/principal.js';
import { visibleTo } from '../../auth/visibility.js';
import type { Db } from '../../db/database.js';
import { containsPattern, countAllOf, fetchPage, fullCount } from '../../db/paging.js';

// Reads of subscriptions: SQL on the mirror.

// The automatic re-snapshot's decision (0 or 1 row) rides along with each subscription.
const query = (db: Db) =>
  db
    .selectFrom('mirror_subscriptions as s')
    .leftJoin('auto_backfills as ab', 'ab.subscription_id', 's.id')
    .where('s.deleting', '=', false);
const columns = [
  's.id',
  's.name',
  's.team_id',
  's.datamodel_id',
  's.target_connector_id',
  's.enabled',
  's.spec',
  's.created_at',
  's.updated_at',
  's.backfill_on_at',
  's.backfill_on_consumed',
  'ab.decision as auto_backfill_decision',
  'ab.reason as auto_backfill_reason',
  'ab.run_id as auto_backfill_run_id',
  'ab.decided_at as auto_backfill_decided_at',
] as const;

export type SubscriptionRecord = Awaited<ReturnType<typeof findSubscription>> & object;

export function findSubscription(db: Db, id: string) {
  return query(db).select(columns).where('s.id', '=', id).executeTakeFirst();
}

export interface SubscriptionFilters {
  team_id?: string;
  datamodel_id?: string;
  target_connector_id?: string;
  enabled?: boolean;
  search?: string;
}

export async function listSubscriptions(
  db: Db,
  p: Principal,
  f: SubscriptionFilters,
  offset: number,
  limit: number,
) {
  let q = query(db).where(visibleTo(p, 's.team_id'));
  if (f.team_id) q = q.where('s.team_id', '=', f.team_id);
  if (f.datamodel_id) q = q.where('s.datamodel_id', '=', f.datamodel_id);
  if (f.target_connector_id) q = q.where('s.target_connector_id', '=', f.target_connector_id);
  if (f.enabled !== undefined) q = q.where('s.enabled', '=', f.enabled);
  if (f.search) q = q.where('s.name', 'ilike', containsPattern(f.search));
  return fetchPage(
    () =>
      q
        .select(columns)
        .select(fullCount)
        .orderBy('s.name')
        .orderBy('s.id')
        .offset(offset)
        .limit(limit)
        .execute(),
    countAllOf(q),
    offset,
  );
}

/** The pipeline that owns a subscription, if any. */
export function owningPipeline(db: Db, subscriptionId: string) {
  return db
    .selectFrom('mirror_pipelines')
    .select(['id', 'name'])
    .where('subscription_id', '=', subscriptionId)
    .where('deleting', '=', false)
    .executeTakeFirst();
}
