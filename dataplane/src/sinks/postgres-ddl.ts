import type { CastType } from '@sluice/shared/mapper';
import { quoteIdent } from '../systems/postgres/connection.js';

// What the PostgreSQL target creates: a table per target_table_name, its
// columns typed from the mapper's casts (or, without a cast, from the values
// of the first batch that carries the column), a PRIMARY KEY on the
// subscription's primary-key columns. Columns are added, never dropped or
// retyped: a column that disappears from the mapper keeps its data.
// Pure functions, so the preview endpoint shows the DDL without a connection.

/** The PostgreSQL type of each mapper cast (docs/data-plane-postgres.md). */
export const CAST_PG_TYPES: Readonly<Record<CastType, string>> = {
  string: 'text',
  int: 'bigint',
  float: 'double precision',
  bool: 'boolean',
  date: 'date',
  // A datetime cast keeps its UTC offset when it has one; offset-less values
  // are read in the session's time zone, UTC (systems/postgres/connection.ts).
  datetime: 'timestamp with time zone',
  time: 'time without time zone',
};

export interface TableRef {
  schema: string;
  table: string;
}

export const qualified = (t: TableRef): string => `${quoteIdent(t.schema)}.${quoteIdent(t.table)}`;

/**
 * The type of a column without a cast, from the values it has in `rows`:
 * whole numbers → bigint, other numbers → double precision, booleans →
 * boolean, objects and arrays → jsonb, strings (and a column that is null in
 * every row) → text. Mixed kinds fall back to jsonb for structures and text otherwise.
 */
export function inferPgType(rows: readonly Record<string, unknown>[], column: string): string {
  const kinds = new Set<string>();
  for (const row of rows) {
    const v = row[column];
    if (v === null || v === undefined) continue;
    if (typeof v === 'number') kinds.add(Number.isSafeInteger(v) ? 'int' : 'float');
    else if (typeof v === 'bigint') kinds.add('int');
    else if (typeof v === 'boolean') kinds.add('bool');
    else if (typeof v === 'object') kinds.add('json');
    else kinds.add('text');
  }
  if (kinds.size === 0) return 'text';
  if (kinds.has('json')) return 'jsonb';
  if (kinds.size === 1) {
    const only = [...kinds][0];
    return only === 'int'
      ? 'bigint'
      : only === 'float'
        ? 'double precision'
        : only === 'bool'
          ? 'boolean'
          : 'text';
  }
  if ([...kinds].every((k) => k === 'int' || k === 'float')) return 'double precision';
  return 'text';
}

/** Column names in the order they first appear in `rows`, key columns first. */
export function columnsOf(rows: readonly Record<string, unknown>[], keyColumns: readonly string[]): string[] {
  const seen = new Set<string>(keyColumns);
  for (const row of rows) for (const name of Object.keys(row)) seen.add(name);
  return [...seen];
}

/**
 * The DDL that makes the table ready for `rows`: a CREATE TABLE when
 * `existingColumns` is null (no such table), else one ALTER TABLE adding the
 * columns it lacks; [] when nothing is needed. `existingColumns` maps each
 * column of the table to its type.
 */
export function ddlFor(
  target: TableRef,
  existingColumns: ReadonlyMap<string, string> | null,
  rows: readonly Record<string, unknown>[],
  keyColumns: readonly string[],
  casts: Readonly<Record<string, CastType>> = {},
): string[] {
  const typeOf = (c: string) => {
    const cast = Object.hasOwn(casts, c) ? casts[c] : undefined;
    return cast ? CAST_PG_TYPES[cast] : inferPgType(rows, c);
  };
  const columns = columnsOf(rows, keyColumns);
  if (existingColumns === null) {
    if (keyColumns.length === 0) {
      throw new Error(`Table ${qualified(target)} needs at least one primary-key column to be created`);
    }
    const defs = columns.map((c) => `${quoteIdent(c)} ${typeOf(c)}`);
    defs.push(`PRIMARY KEY (${keyColumns.map(quoteIdent).join(', ')})`);
    return [`CREATE TABLE IF NOT EXISTS ${qualified(target)} (${defs.join(', ')})`];
  }
  const missing = columns.filter((c) => !existingColumns.has(c));
  if (missing.length === 0) return [];
  const adds = missing.map((c) => `ADD COLUMN IF NOT EXISTS ${quoteIdent(c)} ${typeOf(c)}`);
  return [`ALTER TABLE ${qualified(target)} ${adds.join(', ')}`];
}

/** The types ddlFor gives the columns it creates or adds (to cache them without asking the server). */
export function plannedTypes(
  existingColumns: ReadonlyMap<string, string> | null,
  rows: readonly Record<string, unknown>[],
  keyColumns: readonly string[],
  casts: Readonly<Record<string, CastType>> = {},
): Map<string, string> {
  const out = new Map(existingColumns ?? []);
  for (const c of columnsOf(rows, keyColumns)) {
    if (out.has(c)) continue;
    const cast = Object.hasOwn(casts, c) ? casts[c] : undefined;
    out.set(c, cast ? CAST_PG_TYPES[cast] : inferPgType(rows, c));
  }
  return out;
}

/** What kind of values a PostgreSQL type takes, for the comparison of typeConflicts. */
function familyOf(type: string): 'number' | 'boolean' | 'temporal' | 'text' | 'json' | 'other' {
  const t = type.toLowerCase();
  if (/^(smallint|integer|bigint|real|double precision|numeric|decimal)\b/.test(t)) return 'number';
  if (t === 'boolean') return 'boolean';
  if (/^(date|time|timestamp)\b/.test(t)) return 'temporal';
  if (/^(text|character|character varying|varchar|char|citext|name)\b/.test(t)) return 'text';
  if (t === 'json' || t === 'jsonb') return 'json';
  return 'other';
}

export interface TypeConflict {
  column: string;
  /** The column's type in the existing table (format_type). */
  table_type: string;
  /** The type Sluice would give it: the mapper's cast, else inferred from the values. */
  mapper_type: string;
}

/**
 * Columns of an existing table whose type may refuse what the mapper
 * produces: the sink sends every value as text cast to the table's type
 * (postgres.ts), so a text or json column takes anything, while a number,
 * boolean or date/time column refuses values of another kind (the batch then
 * fails). Types Sluice does not know (uuid, arrays, enums…) are not judged.
 * The sink never retypes a column; this is the preview's warning.
 */
export function typeConflicts(
  existingColumns: ReadonlyMap<string, string>,
  rows: readonly Record<string, unknown>[],
  keyColumns: readonly string[],
  casts: Readonly<Record<string, CastType>> = {},
): TypeConflict[] {
  const planned = plannedTypes(null, rows, keyColumns, casts);
  const out: TypeConflict[] = [];
  for (const [column, mapperType] of planned) {
    const tableType = existingColumns.get(column);
    if (tableType === undefined) continue;
    const have = familyOf(tableType);
    if (have === 'text' || have === 'json' || have === 'other') continue;
    // A column null in every row is inferred as text but carries no value to refuse.
    const cast = Object.hasOwn(casts, column) ? casts[column] : undefined;
    if (!cast && rows.every((r) => r[column] === null || r[column] === undefined)) continue;
    if (familyOf(mapperType) !== have) out.push({ column, table_type: tableType, mapper_type: mapperType });
  }
  return out;
}
