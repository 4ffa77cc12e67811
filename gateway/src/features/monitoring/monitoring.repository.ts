import type { Db } from '../../db/database.js';

// Reads of the mirror for the measurement of replication slots (the writes go
// through CatalogStore, to the cluster first).

/** What the slot measurement needs of a connector. */
export interface SlotSourceRow {
  id: string;
  connector_type: string;
  state: string;
  spec: unknown;
  status: unknown;
}

const columns = ['c.id', 'c.connector_type', 'c.state', 'c.spec', 'c.status'] as const;

export function findSourceConnector(db: Db, id: string): Promise<SlotSourceRow | undefined> {
  return db
    .selectFrom('mirror_connectors as c')
    .select(columns)
    .where('c.id', '=', id)
    .where('c.deleting', '=', false)
    .executeTakeFirst();
}

/**
 * Sources no worker reads (paused, or failed): the gateway measures their
 * slots (PostgreSQL) and binary logs (MySQL, MariaDB).
 */
export function unreadSources(db: Db, limit: number, types: readonly string[]): Promise<SlotSourceRow[]> {
  return db
    .selectFrom('mirror_connectors as c')
    .select(columns)
    .where('c.connector_type', 'in', types)
    .where('c.state', 'in', ['paused', 'error'])
    .where('c.deleting', '=', false)
    .orderBy('c.id')
    .limit(limit)
    .execute();
}
