import type pg from 'pg';
import { quoteIdent } from '../../systems/postgres/connection.js';

// The source tables: a whitelist entry's schema and table, and a table's key
// (the capture's snapshot and stream, and a backfill's keyset pages).

export function parseEntry(entry: string): { schema: string; table: string } {
  const dot = entry.indexOf('.');
  return dot < 0
    ? { schema: 'public', table: entry }
    : { schema: entry.slice(0, dot), table: entry.slice(dot + 1) };
}

export const qualifiedEntry = (e: { schema: string; table: string }) =>
  `${quoteIdent(e.schema)}.${quoteIdent(e.table)}`;

/** The primary-key columns of a table, in key order; null when it has none. */
export async function primaryKey(client: pg.Client, relation: string | number): Promise<string[] | null> {
  const { rows } = await client.query<{ name: string }>(
    `select a.attname::text as name
       from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
      where i.indrelid = ${typeof relation === 'number' ? '$1::oid' : '$1::regclass'} and i.indisprimary
      order by array_position(i.indkey::int2[], a.attnum)`,
    [relation],
  );
  return rows.length ? rows.map((r) => r.name) : null;
}
