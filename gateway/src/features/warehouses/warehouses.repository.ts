import type { Principal } from '../../auth/principal.js';
import { visibleTo } from '../../auth/visibility.js';
import type { Db } from '../../db/database.js';
import { containsPattern, countAllOf, fetchPage, fullCount } from '../../db/paging.js';

// Reads of warehouses: SQL on the mirror (writes go through CatalogStore).
// Rows being deleted or deleted are invisible to every read.

function warehouseQuery(db: Db) {
  return db
    .selectFrom('mirror_warehouses as w')
    .innerJoin('teams', 'teams.id', 'w.team_id')
    .where('w.deleting', '=', false);
}

const columns = [
  'w.id',
  'w.name',
  'w.team_id',
  'w.state',
  'w.spec',
  'w.status',
  'w.created_at',
  'w.updated_at',
  'teams.name as team_name',
] as const;

export type WarehouseRecord = Awaited<ReturnType<typeof findWarehouse>> & object;

export function findWarehouse(db: Db, id: string) {
  return warehouseQuery(db).select(columns).where('w.id', '=', id).executeTakeFirst();
}

export function findWarehouseByName(db: Db, teamId: string, name: string) {
  return warehouseQuery(db)
    .select(columns)
    .where('w.team_id', '=', teamId)
    .where('w.name', '=', name)
    .executeTakeFirst();
}

export interface WarehouseFilters {
  team_id?: string;
  status?: string;
  search?: string;
}

export async function listWarehouses(
  db: Db,
  p: Principal,
  f: WarehouseFilters,
  offset: number,
  limit: number,
): Promise<{ rows: WarehouseRecord[]; total: number }> {
  let q = warehouseQuery(db).where(visibleTo(p, 'w.team_id'));
  if (f.team_id) q = q.where('w.team_id', '=', f.team_id);
  if (f.status) q = q.where('w.state', '=', f.status);
  if (f.search) q = q.where('w.name', 'ilike', containsPattern(f.search));
  return fetchPage(
    () =>
      q
        .select(columns)
        .select(fullCount)
        .orderBy('w.name')
        .orderBy('w.id')
        .offset(offset)
        .limit(limit)
        .execute(),
    countAllOf(q),
    offset,
  );
}
