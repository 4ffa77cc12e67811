import type pg from 'pg';
import { changeEvent } from '../contracts.js';
import { SystemFailure } from '../systems/failure.js';
import { quoteIdent } from '../systems/postgres/connection.js';
import { decodeValue } from '../sources/pgoutput.js';
import { parseEntry, primaryKey, qualifiedEntry } from '../sources/postgres-cdc/tables.js';
import type { ConsumedMessage } from '../target/records.js';

// A backfill's re-snapshot of one source table (docs/data-plane.md
// "Backfills"): keyset pages in primary-key order, so each page is one short
// query (no transaction held open for the whole table, no cursor to lose on
// a restart) and a resumed run starts after the last key written. Rows are
// decoded as the CDC snapshot decodes them and become snapshot reads (op
// `r`), which the target loop maps like any change event.

export interface TableKey {
  /** The primary-key columns, in key order. */
  columns: string[];
  /** Their types as PostgreSQL spells them (`integer`, `text`…), to cast the page's lower bound. */
  types: string[];
}

/** The primary key of `entry` (`schema.table`) with its column types; a table without one cannot be paged. */
export async function tableKey(client: pg.Client, entry: string): Promise<TableKey> {
  const from = qualifiedEntry(parseEntry(entry));
  const { rows } = await client.query<{ ok: boolean }>('select to_regclass($1) is not null as ok', [from]);
  if (!rows[0]?.ok) throw new SystemFailure(`Table ${entry} does not exist in the source database`);
  const columns = await primaryKey(client, from);
  if (!columns)
    throw new SystemFailure(`Table ${entry} has no primary key: a re-snapshot reads tables in key order`);
  const types = await client.query<{ name: string; type: string }>(
    `select a.attname::text as name, format_type(a.atttypid, a.atttypmod) as type
       from pg_attribute a where a.attrelid = $1::regclass and a.attnum > 0 and not a.attisdropped`,
    [from],
  );
  const typeOf = new Map(types.rows.map((r) => [r.name, r.type]));
  return { columns, types: columns.map((c) => typeOf.get(c) ?? 'text') };
}

/** The planner's row count of `entry`, or count(*) when the table was never analysed. */
export async function estimateTableRows(client: pg.Client, entry: string): Promise<number> {
  const from = qualifiedEntry(parseEntry(entry));
  const { rows } = await client.query<{ n: number }>(
    'select reltuples::float8 as n from pg_class where oid = $1::regclass',
    [from],
  );
  const n = rows[0]?.n ?? -1;
  if (n >= 0) return Math.round(n);
  const counted = await client.query<{ n: string }>(`select count(*)::text as n from ${from}`);
  return Number(counted.rows[0]?.n ?? 0);
}

const types = { getTypeParser: (oid: number) => (text: string) => decodeValue(oid, text) };

/**
 * The next `limit` rows of `entry` after `after` (the key values of the last
 * row read; null for the first page), in key order.
 */
export async function readTablePage(
  client: pg.Client,
  entry: string,
  key: TableKey,
  after: unknown[] | null,
  limit: number,
): Promise<Record<string, unknown>[]> {
  const from = qualifiedEntry(parseEntry(entry));
  const cols = key.columns.map(quoteIdent).join(', ');
  const bound = key.types.map((t, i) => `$${i + 1}::${t}`).join(', ');
  const where = after ? `where (${cols}) > (${bound})` : '';
  const { rows } = await client.query<Record<string, unknown>>({
    text: `select * from ${from} ${where} order by ${cols} limit ${Math.max(1, Math.floor(limit))}`,
    values: after ? after.map((v) => (v !== null && typeof v === 'object' ? JSON.stringify(v) : v)) : [],
    types,
  });
  return rows;
}

/**
 * Rows read by a re-snapshot as the messages of the data model's stream: a
 * snapshot ChangeEvent (op `r`) each, on `topic`, at partition -1 (so their
 * error-table rows never collide with a stream offset) and offsets `first`,
 * `first + 1`… of this item.
 */
export function snapshotMessages(
  rows: readonly Record<string, unknown>[],
  key: { columns: readonly string[] },
  at: { connectorId: string; datamodelId: string; entry: string; topic: string; first: number },
): ConsumedMessage[] {
  const now = Date.now();
  return rows.map((row, i) => {
    const event = changeEvent({
      op: 'r',
      before: null,
      after: row,
      keyColumns: [...key.columns],
      connector_id: at.connectorId,
      datamodel_id: at.datamodelId,
      entry: at.entry,
      position: 'backfill',
      snapshot: true,
      tsMs: now,
    });
    return {
      topic: at.topic,
      partition: -1,
      offset: BigInt(at.first + i),
      timestamp: BigInt(now),
      key: Buffer.from(JSON.stringify(event.key)),
      value: Buffer.from(JSON.stringify(event)),
      headers: new Map(),
    };
  });
}

/** The key values of a row, in key order (the progress a resumed re-snapshot starts after). */
export const keyValuesOf = (row: Record<string, unknown>, key: TableKey): unknown[] =>
  key.columns.map((c) => row[c] ?? null);
