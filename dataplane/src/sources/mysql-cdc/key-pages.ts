import type mysql from 'mysql2/promise';
import type { TableColumn, TableShape } from './columns.js';
import { snapshotValue } from './row-values.js';

// A MySQL or MariaDB table read in primary-key order, a keyset page at a
// time (`WHERE (k1, k2) > (…) ORDER BY k1, k2 LIMIT n`): each query is short
// and holds little. The initial snapshot reads its tables so (snapshot.ts,
// inside its one transaction), and so does a backfill's re-snapshot (one
// query per page, the bound kept as its progress: backfill/source-reader.ts).

/** A row as the text protocol sends it: each value's bytes (row-values.ts converts them by column). */
export type RawRow = Record<string, Buffer | null>;

/** The key of the last row read: the next page starts after it. */
export type KeyBound = (Buffer | string)[];

export const quoteId = (name: string) => '`' + name.replace(/`/g, '``') + '`';
export const qualified = (s: { schema: string; table: string }) => `${quoteId(s.schema)}.${quoteId(s.table)}`;

/** Every value as the bytes of the text protocol. */
export const RAW = { typeCast: (field: { buffer(): Buffer | null }) => field.buffer() };

/**
 * Whether a key column's bound is sent as bytes (a hex literal: binary
 * strings and BIT) rather than as text (a string literal, which the server
 * converts to the column's type).
 */
const boundIsBytes = (c: TableColumn) =>
  c.dataType === 'bit' || (c.charset === null && /binary|blob/.test(c.dataType));

const keyColumnsOf = (shape: TableShape): TableColumn[] =>
  shape.primaryKey.map((k) => shape.columns.find((c) => c.name === k)!);

/** The next `limit` rows of a table with a primary key after `after` (null: the first page), in key order. */
export async function readKeyPage(
  conn: mysql.Connection,
  shape: TableShape,
  after: KeyBound | null,
  limit: number,
): Promise<RawRow[]> {
  const columns = shape.columns.map((c) => quoteId(c.name)).join(', ');
  const pk = shape.primaryKey.map(quoteId).join(', ');
  const where = after ? `WHERE (${pk}) > (${after.map(() => '?').join(', ')})` : '';
  const [page] = await conn.query({
    sql: `SELECT ${columns} FROM ${qualified(shape)} ${where} ORDER BY ${pk} LIMIT ${Math.max(1, Math.floor(limit))}`,
    values: after ?? [],
    ...RAW,
  });
  return page as RawRow[];
}

/** The bound after `row`, for the next page. */
export const boundAfter = (shape: TableShape, row: RawRow): KeyBound =>
  keyColumnsOf(shape).map((c) => {
    const v = row[c.name] as Buffer;
    return boundIsBytes(c) ? v : v.toString('utf8');
  });

/** A row's values as events carry them (docs/data-plane-mysql.md "Types"). */
export function rowOf(shape: TableShape, raw: RawRow): Record<string, unknown> {
  const row: Record<string, unknown> = {};
  for (const col of shape.columns) row[col.name] = snapshotValue(col, raw[col.name] ?? null);
  return row;
}

/** The bound as JSON can hold it (a backfill's recorded progress): bytes as hex. */
export const boundToJson = (bound: KeyBound): string[] =>
  bound.map((v) => (typeof v === 'string' ? v : v.toString('hex')));

/** The bound recorded by boundToJson, for the table's key columns. */
export const boundFromJson = (shape: TableShape, json: readonly unknown[]): KeyBound =>
  keyColumnsOf(shape).map((c, i) => {
    const v = String(json[i] ?? '');
    return boundIsBytes(c) ? Buffer.from(v, 'hex') : v;
  });
