import { sql } from 'kysely';
import type { Principal } from '../../auth/principal.js';
import { visibleTo } from '../../auth/visibility.js';
import type { Db } from '../../db/database.js';
import { containsPattern, countAllOf, fetchPage, fullCount } from '../../db/paging.js';

// Reads of pipelines: SQL on the mirror, joined with the mirror rows of their
// connectors and subscription for the list's names, types and rule counts.

const base = (db: Db) =>
  db
    .selectFrom('mirror_pipelines as pl')
    .innerJoin('teams', 'teams.id', 'pl.team_id')
    .where('pl.deleting', '=', false);

const columns = [
  'pl.id',
  'pl.name',
  'pl.team_id',
  'pl.state',
  'pl.version',
  'pl.spec',
  'pl.status',
  'pl.source_connector_id',
  'pl.target_connector_id',
  'pl.datamodel_id',
  'pl.subscription_id',
  'pl.created_at',
  'pl.updated_at',
  'teams.name as team_name',
] as const;

export type PipelineRecord = Awaited<ReturnType<typeof findPipeline>> & object;

export function findPipeline(db: Db, id: string) {
  return base(db).select(columns).where('pl.id', '=', id).executeTakeFirst();
}

export function findPipelineByName(db: Db, teamId: string, name: string) {
  return base(db)
    .select(columns)
    .where('pl.team_id', '=', teamId)
    .where('pl.name', '=', name)
    .executeTakeFirst();
}

export function findVisiblePipelineByName(db: Db, p: Principal, name: string, teamId?: string) {
  let q = base(db).select(columns).where('pl.name', '=', name).where(visibleTo(p, 'pl.team_id'));
  if (teamId) q = q.where('pl.team_id', '=', teamId);
  return q.orderBy('pl.created_at').executeTakeFirst();
}

export interface PipelineFilters {
  search?: string;
  state?: string;
  team_id?: string;
  /** status/all-non-draft */
  nonDraft?: boolean;
}

function filtered(db: Db, p: Principal, f: PipelineFilters) {
  let q = base(db).where(visibleTo(p, 'pl.team_id'));
  if (f.team_id) q = q.where('pl.team_id', '=', f.team_id);
  if (f.state) q = q.where('pl.state', '=', f.state);
  if (f.nonDraft) q = q.where('pl.state', '<>', 'draft');
  // Spec 4.4: "name or description"; a pipeline has no description, so the name.
  if (f.search) q = q.where('pl.name', 'ilike', containsPattern(f.search));
  return q;
}

/** PipelineList rows: names and types of both connectors, and the number of mapper rules. */
export async function listPipelines(db: Db, p: Principal, f: PipelineFilters, offset: number, limit: number) {
  const q = filtered(db, p, f);
  return fetchPage(
    () =>
      q
        .leftJoin('mirror_connectors as src', 'src.id', 'pl.source_connector_id')
        .leftJoin('mirror_connectors as tgt', 'tgt.id', 'pl.target_connector_id')
        .leftJoin('mirror_subscriptions as sub', 'sub.id', 'pl.subscription_id')
        .select([
          'pl.id',
          'pl.name',
          'pl.state',
          'teams.name as owner',
          'src.name as source_name',
          'src.connector_type as source_type',
          'tgt.name as target_name',
          'tgt.connector_type as target_type',
          sql<number>`coalesce(jsonb_array_length(sub.spec -> 'mapperConfig'), 0)`.as('transform'),
        ])
        .select(fullCount)
        .orderBy('pl.name')
        .orderBy('pl.id')
        .offset(offset)
        .limit(limit)
        .execute(),
    countAllOf(q),
    offset,
  );
}

export async function listPipelineStatuses(
  db: Db,
  p: Principal,
  f: PipelineFilters,
  offset: number,
  limit: number,
) {
  const q = filtered(db, p, f);
  return fetchPage(
    () =>
      q
        .select(columns)
        .select(fullCount)
        .orderBy('pl.name')
        .orderBy('pl.id')
        .offset(offset)
        .limit(limit)
        .execute(),
    countAllOf(q),
    offset,
  );
}

export async function countByState(db: Db, p: Principal, teamId?: string): Promise<Record<string, number>> {
  const rows = await filtered(db, p, { team_id: teamId })
    .select(['pl.state', (eb) => eb.fn.countAll<string>().as('n')])
    .groupBy('pl.state')
    .execute();
  return Object.fromEntries(rows.map((r) => [r.state, Number(r.n)]));
}

/** Pipelines other than `except` that use a connector (so it must stay when `except` goes). */
export async function otherUsersOfConnector(db: Db, connectorId: string, exceptPipeline: string) {
  const pipelines = await db
    .selectFrom('mirror_pipelines')
    .select('id')
    .where('deleting', '=', false)
    .where('id', '<>', exceptPipeline)
    .where((eb) =>
      eb.or([eb('source_connector_id', '=', connectorId), eb('target_connector_id', '=', connectorId)]),
    )
    .execute();
  return pipelines.length;
}

/** The spec copies of objects of one mirror table, by id. */
export async function specsById(
  db: Db,
  table: 'mirror_connectors' | 'mirror_datamodels' | 'mirror_subscriptions',
  ids: string[],
): Promise<Map<string, { spec: unknown; status: unknown; created_at: Date; updated_at: Date }>> {
  if (ids.length === 0) return new Map();
  const rows = await db
    .selectFrom(table)
    .select(['id', 'spec', 'status', 'created_at', 'updated_at'])
    .where('id', 'in', ids)
    .where('deleting', '=', false)
    .execute();
  return new Map(rows.map((r) => [r.id, r]));
}

/** The pipelines that use a connector (as their source or target) or a subscription, those being deleted too. */
export async function pipelineIdsUsing(
  db: Db,
  part: { connectorId: string } | { subscriptionId: string },
): Promise<string[]> {
  const rows = await db
    .selectFrom('mirror_pipelines')
    .select('id')
    .where((eb) =>
      'connectorId' in part
        ? eb.or([
            eb('source_connector_id', '=', part.connectorId),
            eb('target_connector_id', '=', part.connectorId),
          ])
        : eb('subscription_id', '=', part.subscriptionId),
    )
    .execute();
  return rows.map((r) => r.id);
}
