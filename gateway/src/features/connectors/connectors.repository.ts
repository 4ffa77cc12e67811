import type { Principal } from '../../auth/principal.js';
import { visibleTo } from '../../auth/visibility.js';
import type { Db } from '../../db/database.js';
import { containsPattern, countAllOf, fetchPage, fullCount } from '../../db/paging.js';

// Reads of connectors: SQL on the mirror (writes go through CatalogStore).
// Rows being deleted or deleted are invisible to every read.

export function connectorQuery(db: Db) {
  return db
    .selectFrom('mirror_connectors as c')
    .innerJoin('teams', 'teams.id', 'c.team_id')
    .where('c.deleting', '=', false);
}

const columns = [
  'c.id',
  'c.name',
  'c.namespace',
  'c.team_id',
  'c.connector_type',
  'c.direction',
  'c.state',
  'c.desired_state',
  'c.spec',
  'c.status',
  'c.created_at',
  'c.updated_at',
  'teams.name as team_name',
] as const;

export type ConnectorRecord = Awaited<ReturnType<typeof findConnector>> & object;

export function findConnector(db: Db, id: string) {
  return connectorQuery(db).select(columns).where('c.id', '=', id).executeTakeFirst();
}

/**
 * A connector to delete, whether its team is still there or not (a team's
 * deletion removes the team row first); one already being deleted is not.
 */
export function findConnectorToDelete(db: Db, id: string) {
  return db
    .selectFrom('mirror_connectors')
    .select(['id', 'connector_type', 'spec'])
    .where('id', '=', id)
    .where('deleting', '=', false)
    .executeTakeFirst();
}

export function findConnectorByName(db: Db, teamId: string, name: string) {
  return connectorQuery(db)
    .select(columns)
    .where('c.team_id', '=', teamId)
    .where('c.name', '=', name)
    .executeTakeFirst();
}

/** The one connector of this name the caller may see (several teams may use one name: the oldest). */
export function findVisibleConnectorByName(db: Db, p: Principal, name: string, teamId?: string) {
  let q = connectorQuery(db).select(columns).where('c.name', '=', name).where(visibleTo(p, 'c.team_id'));
  if (teamId) q = q.where('c.team_id', '=', teamId);
  return q.orderBy('c.created_at').executeTakeFirst();
}

export interface ConnectorFilters {
  team_id?: string;
  connector_type?: string;
  status?: string;
  search?: string;
  direction?: string;
}

export async function listConnectors(
  db: Db,
  p: Principal,
  f: ConnectorFilters,
  offset: number,
  limit: number,
): Promise<{ rows: ConnectorRecord[]; total: number }> {
  let q = connectorQuery(db).where(visibleTo(p, 'c.team_id'));
  if (f.team_id) q = q.where('c.team_id', '=', f.team_id);
  if (f.connector_type) q = q.where('c.connector_type', '=', f.connector_type);
  if (f.status) q = q.where('c.state', '=', f.status);
  if (f.direction) q = q.where('c.direction', '=', f.direction);
  if (f.search) q = q.where('c.name', 'ilike', containsPattern(f.search));
  return fetchPage(
    () =>
      q
        .select(columns)
        .select(fullCount)
        .orderBy('c.name')
        .orderBy('c.id')
        .offset(offset)
        .limit(limit)
        .execute(),
    countAllOf(q),
    offset,
  );
}

/** Data model ids of each connector, oldest first. */
export async function datamodelIdsOf(db: Db, connectorIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(connectorIds.map((id) => [id, []]));
  if (connectorIds.length === 0) return out;
  const rows = await db
    .selectFrom('mirror_datamodels')
    .select(['id', 'connector_id'])
    .where('connector_id', 'in', connectorIds)
    .where('deleting', '=', false)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  for (const r of rows) out.get(r.connector_id)?.push(r.id);
  return out;
}

/** What still uses a connector: subscriptions (as target or of its data models) and pipelines. */
export async function connectorUsers(
  db: Db,
  id: string,
): Promise<{ subscriptions: string[]; pipelines: string[] }> {
  const subscriptions = await db
    .selectFrom('mirror_subscriptions as s')
    .select('s.name')
    .where('s.deleting', '=', false)
    .where((eb) =>
      eb.or([
        eb('s.target_connector_id', '=', id),
        eb(
          's.datamodel_id',
          'in',
          eb.selectFrom('mirror_datamodels as d').select('d.id').where('d.connector_id', '=', id),
        ),
      ]),
    )
    .orderBy('s.name')
    .execute();
  const pipelines = await db
    .selectFrom('mirror_pipelines as pl')
    .select('pl.name')
    .where('pl.deleting', '=', false)
    .where((eb) => eb.or([eb('pl.source_connector_id', '=', id), eb('pl.target_connector_id', '=', id)]))
    .orderBy('pl.name')
    .execute();
  return { subscriptions: subscriptions.map((s) => s.name), pipelines: pipelines.map((p) => p.name) };
}

export type MirroredSpecTable = 'mirror_datamodels' | 'mirror_subscriptions' | 'mirror_connectors';

/** The live rows' spec copies of one mirror table whose `column` is `value`, oldest first. */
export function mirroredSpecs(
  db: Db,
  table: MirroredSpecTable,
  column: 'id' | 'connector_id' | 'target_connector_id',
  value: string,
) {
  return (
    db
      .selectFrom(table)
      .select(['id', 'spec'])
      // The column is one of `table`'s; Kysely cannot check that for a table chosen at run time.
      // eslint-disable-next-line @typescript-eslint/no-explicit-any
      .where(column as any, '=', value)
      .where('deleting', '=', false)
      .orderBy('created_at')
      .execute()
  );
}

/** The effective switch of each subscription writing to a target connector, as the mirror projects it. */
export async function subscriptionSwitches(db: Db, targetConnectorId: string): Promise<Map<string, boolean>> {
  const rows = await db
    .selectFrom('mirror_subscriptions')
    .select(['id', 'enabled'])
    .where('target_connector_id', '=', targetConnectorId)
    .execute();
  return new Map(rows.map((r) => [r.id, r.enabled]));
}
