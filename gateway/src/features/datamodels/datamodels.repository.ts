import type { Principal } from '../../auth/principal.js';
import { visibleTo } from '../../auth/visibility.js';
import type { Db } from '../../db/database.js';
import { containsPattern, countAllOf, fetchPage, fullCount } from '../../db/paging.js';

// Reads of data models: SQL on the mirror.

const query = (db: Db) => db.selectFrom('mirror_datamodels as d').where('d.deleting', '=', false);
const columns = [
  'd.id',
  'd.name',
  'd.namespace',
  'd.team_id',
  'd.connector_id',
  'd.entry',
  'd.enabled',
  'd.spec',
  'd.status',
  'd.created_at',
  'd.updated_at',
] as const;

export type DataModelRecord = Awaited<ReturnType<typeof findDataModel>> & object;

export function findDataModel(db: Db, id: string) {
  return query(db).select(columns).where('d.id', '=', id).executeTakeFirst();
}

export interface DataModelFilters {
  team_id?: string;
  connector_id?: string;
  enabled?: boolean;
  search?: string;
}

export async function listDataModels(
  db: Db,
  p: Principal,
  f: DataModelFilters,
  offset: number,
  limit: number,
) {
  let q = query(db).where(visibleTo(p, 'd.team_id'));
  if (f.team_id) q = q.where('d.team_id', '=', f.team_id);
  if (f.connector_id) q = q.where('d.connector_id', '=', f.connector_id);
  if (f.enabled !== undefined) q = q.where('d.enabled', '=', f.enabled);
  if (f.search) q = q.where('d.name', 'ilike', containsPattern(f.search));
  return fetchPage(
    () =>
      q
        .select(columns)
        .select(fullCount)
        .orderBy('d.name')
        .orderBy('d.id')
        .offset(offset)
        .limit(limit)
        .execute(),
    countAllOf(q),
    offset,
  );
}

/** Names of the subscriptions and pipelines that deliver this data model. */
export async function datamodelUsers(db: Db, id: string): Promise<string[]> {
  const subs = await db
    .selectFrom('mirror_subscriptions')
    .select('name')
    .where('datamodel_id', '=', id)
    .where('deleting', '=', false)
    .execute();
  const pipelines = await db
    .selectFrom('mirror_pipelines')
    .select('name')
    .where('datamodel_id', '=', id)
    .where('deleting', '=', false)
    .execute();
  return [...pipelines.map((r) => `pipeline "${r.name}"`), ...subs.map((r) => `subscription "${r.name}"`)];
}
