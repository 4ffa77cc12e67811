import type { CastType } from '@sluice/shared/mapper';
import { columnsOf, inferPgType } from './postgres-ddl.js';

// What the ORACLE_TARGET sink sends, as pure functions of the batch (no
// connection, no driver), so the SQL text and its bind values are what the
// unit tests assert — no Oracle server runs where Sluice is built. The
// choices (docs/data-plane.md, "Oracle target"):
//
// - Names. Every identifier is double-quoted. A mapper name Oracle would take
//   unquoted (a letter, then letters, digits, _ $ #) is folded to upper case,
//   as Oracle folds unquoted names, so `customer_id` is the column
//   CUSTOMER_ID that `select customer_id from orders` finds; any other name
//   ("Unit Price", "2fa", "naïve") is kept exactly as given. Oracle cannot
//   store a double quote or NUL in a name, and a name is at most 128 bytes:
//   such names are refused with a message naming them.
// - `target_table_name` is a table of the connecting user's schema, or
//   `OWNER.TABLE` when it is two plain names joined by a dot.
// - Values travel as text and are converted in the statement
//   (TO_NUMBER, TO_TIMESTAMP_TZ, …) under fixed session settings
//   (SESSION_SETUP_SQL), the way the PostgreSQL sink casts text[]: the
//   statement is one text per column set, whatever the values' JavaScript types.

/** A name that Oracle refuses as an identifier, or a value a column cannot take. */
export class OracleSqlError extends Error {
  override readonly name = 'OracleSqlError';
}

/** Oracle 12.2+ identifiers: 128 bytes at most. */
export const MAX_IDENTIFIER_BYTES = 128;

const PLAIN_NAME = /^[A-Za-z][A-Za-z0-9_$#]*$/;

/** The name Oracle stores for a mapper name (see the file comment). */
export function oracleName(name: string): string {
  if (name.length === 0) throw new OracleSqlError('An empty name cannot be an Oracle identifier');
  if (name.includes('"') || name.includes('\0')) {
    throw new OracleSqlError(`"${name}" cannot be an Oracle identifier: it contains a double quote or NUL`);
  }
  const stored = PLAIN_NAME.test(name) ? name.toUpperCase() : name;
  if (Buffer.byteLength(stored, 'utf8') > MAX_IDENTIFIER_BYTES) {
    throw new OracleSqlError(`"${name}" is longer than Oracle's ${MAX_IDENTIFIER_BYTES}-byte name limit`);
  }
  return stored;
}

/** A quoted identifier of a mapper name. */
export const oracleIdent = (name: string): string => `"${oracleName(name)}"`;

/** A target table: its owner (null: the session's schema) and name, as Oracle stores them. */
export interface OracleTableRef {
  owner: string | null;
  table: string;
}

export function oracleTableRef(targetTableName: string): OracleTableRef {
  const parts = targetTableName.split('.');
  if (parts.length === 2 && parts.every((p) => PLAIN_NAME.test(p))) {
    return { owner: oracleName(parts[0] as string), table: oracleName(parts[1] as string) };
  }
  return { owner: null, table: oracleName(targetTableName) };
}

export const qualifiedOracle = (ref: OracleTableRef): string =>
  ref.owner === null ? `"${ref.table}"` : `"${ref.owner}"."${ref.table}"`;

/**
 * Session settings of every connection: UTC, '.' as the decimal separator,
 * ISO formats — so the conversions below do not depend on the server's NLS
 * defaults.
 */
export const SESSION_SETUP_SQL =
  "ALTER SESSION SET TIME_ZONE = '+00:00' NLS_NUMERIC_CHARACTERS = '.,' " +
  "NLS_DATE_FORMAT = 'YYYY-MM-DD HH24:MI:SS' NLS_TIMESTAMP_FORMAT = 'YYYY-MM-DD HH24:MI:SS.FF' " +
  "NLS_TIMESTAMP_TZ_FORMAT = 'YYYY-MM-DD HH24:MI:SS.FF TZH:TZM'";

/** The columns of a table (Oracle name → DATA_TYPE); no row: no such table. Binds: owner (or null), table. */
export const DESCRIBE_SQL =
  'SELECT column_name, data_type FROM all_tab_columns ' +
  "WHERE owner = NVL(:1, SYS_CONTEXT('USERENV', 'CURRENT_SCHEMA')) AND table_name = :2 ORDER BY column_id";

export const describeBinds = (ref: OracleTableRef): (string | null)[] => [ref.owner, ref.table];

/**
 * The Oracle type of each mapper cast. BOOLEAN exists only from 23ai on, so
 * booleans are NUMBER(1) (1/0) on every version; a 23ai table the user
 * created with BOOLEAN columns is written too (TO_BOOLEAN). Oracle has no
 * time-of-day type: a time is its ISO text.
 */
export const CAST_ORACLE_TYPES: Readonly<Record<CastType, string>> = {
  string: 'VARCHAR2(4000 CHAR)',
  int: 'NUMBER(19)',
  float: 'BINARY_DOUBLE',
  bool: 'NUMBER(1)',
  date: 'DATE',
  datetime: 'TIMESTAMP(6) WITH TIME ZONE',
  time: 'VARCHAR2(32 CHAR)',
};

/**
 * What types a table's new columns: the mapper's casts, or `clob` for a
 * column known to hold long text (the error table's `message`).
 */
export type ColumnHints = Readonly<Record<string, CastType | 'clob'>>;

/** VARCHAR2's limit in bytes (MAX_STRING_SIZE = STANDARD, the default). */
const VARCHAR2_MAX_BYTES = 4000;

/**
 * The type of an uncast column, from its values (the PostgreSQL sink's
 * inference, in Oracle's types). Text is VARCHAR2(4000 CHAR) unless a value
 * of the creating batch is already longer: then CLOB.
 */
const INFERRED: Readonly<Record<string, string>> = {
  bigint: 'NUMBER(19)',
  'double precision': 'BINARY_DOUBLE',
  boolean: 'NUMBER(1)',
  jsonb: 'CLOB',
  text: 'VARCHAR2(4000 CHAR)',
};

/**
 * Key columns are indexed, and an index key has a length limit (about
 * 6,400 bytes with 8 KB blocks): a text key is VARCHAR2(500 CHAR), so three
 * of them fit; a structured key is stored as its JSON text.
 */
const KEY_TEXT_TYPE = 'VARCHAR2(500 CHAR)';

function plannedType(
  rows: readonly Record<string, unknown>[],
  column: string,
  isKey: boolean,
  hints: ColumnHints,
): string {
  const hint = Object.hasOwn(hints, column) ? hints[column] : undefined;
  if (hint === 'clob') return isKey ? KEY_TEXT_TYPE : 'CLOB';
  const long = () =>
    rows.some(
      (r) => typeof r[column] === 'string' && Buffer.byteLength(r[column], 'utf8') > VARCHAR2_MAX_BYTES,
    );
  const inferred = INFERRED[inferPgType(rows, column)] ?? 'VARCHAR2(4000 CHAR)';
  const type = hint ? CAST_ORACLE_TYPES[hint] : inferred.startsWith('VARCHAR2') && long() ? 'CLOB' : inferred;
  return isKey && (type.startsWith('VARCHAR2') || type === 'CLOB') ? KEY_TEXT_TYPE : type;
}

/** Mapper column names in order, each with its Oracle name; two names Oracle stores alike are refused. */
function oracleColumns(names: readonly string[]): { name: string; oracle: string }[] {
  const seen = new Map<string, string>();
  return names.map((name) => {
    const oracle = oracleName(name);
    const other = seen.get(oracle);
    if (other !== undefined && other !== name) {
      throw new OracleSqlError(`Columns "${other}" and "${name}" are the same Oracle column ${oracle}`);
    }
    seen.set(oracle, name);
    return { name, oracle };
  });
}

/**
 * The DDL that makes the table ready for `rows`: a CREATE TABLE when
 * `existing` is null (no such table), else one ALTER TABLE … ADD of the
 * columns it lacks; [] when nothing is needed. `existing` maps the Oracle
 * names of the table's columns to their types. Oracle's DDL commits, so the
 * sink runs it before any row of the batch is written.
 */
export function oracleDdlFor(
  ref: OracleTableRef,
  existing: ReadonlyMap<string, string> | null,
  rows: readonly Record<string, unknown>[],
  keyColumns: readonly string[],
  hints: ColumnHints = {},
): string[] {
  const columns = oracleColumns(columnsOf(rows, keyColumns));
  const def = (c: { name: string; oracle: string }) =>
    `"${c.oracle}" ${plannedType(rows, c.name, keyColumns.includes(c.name), hints)}`;
  if (existing === null) {
    if (keyColumns.length === 0) {
      throw new OracleSqlError(`Table ${qualifiedOracle(ref)} needs a primary-key column to be created`);
    }
    const keys = keyColumns.map(oracleIdent).join(', ');
    return [
      `CREATE TABLE ${qualifiedOracle(ref)} (${[...columns.map(def), `PRIMARY KEY (${keys})`].join(', ')})`,
    ];
  }
  const missing = columns.filter((c) => !existing.has(c.oracle));
  if (missing.length === 0) return [];
  return [`ALTER TABLE ${qualifiedOracle(ref)} ADD (${missing.map(def).join(', ')})`];
}

/** The types oracleDdlFor gives the columns it creates or adds (cached without asking the server). */
export function plannedOracleTypes(
  existing: ReadonlyMap<string, string> | null,
  rows: readonly Record<string, unknown>[],
  keyColumns: readonly string[],
  hints: ColumnHints = {},
): Map<string, string> {
  const out = new Map(existing ?? []);
  for (const c of oracleColumns(columnsOf(rows, keyColumns))) {
    if (!out.has(c.oracle)) out.set(c.oracle, plannedType(rows, c.name, keyColumns.includes(c.name), hints));
  }
  return out;
}

/** How a value reaches a column of an Oracle type: its text, and the conversion in the statement. */
export type ValueKind =
  | 'number'
  | 'binary_double'
  | 'binary_float'
  | 'boolean'
  | 'date'
  | 'timestamp'
  | 'timestamp_tz'
  | 'clob'
  | 'json'
  | 'text';

export function valueKind(dataType: string): ValueKind {
  const t = dataType.toUpperCase();
  if (/^(NUMBER|FLOAT|INTEGER|DECIMAL)\b/.test(t)) return 'number';
  if (t === 'BINARY_DOUBLE') return 'binary_double';
  if (t === 'BINARY_FLOAT') return 'binary_float';
  if (t === 'BOOLEAN') return 'boolean';
  if (t === 'DATE') return 'date';
  if (/^TIMESTAMP\b.*\bTIME ZONE$/.test(t)) return 'timestamp_tz';
  if (t.startsWith('TIMESTAMP')) return 'timestamp';
  if (t === 'CLOB' || t === 'NCLOB') return 'clob';
  if (t === 'JSON') return 'json';
  return 'text';
}

const TS_FORMAT = 'YYYY-MM-DD HH24:MI:SS.FF9';

/** The expression that turns bind `:n` into a value of the column. */
function converted(kind: ValueKind, n: number): string {
  switch (kind) {
    case 'number':
      return `TO_NUMBER(:${n})`;
    case 'binary_double':
      return `TO_BINARY_DOUBLE(:${n})`;
    case 'binary_float':
      return `TO_BINARY_FLOAT(:${n})`;
    case 'boolean':
      return `TO_BOOLEAN(:${n})`;
    case 'date':
      return `TO_DATE(:${n}, 'YYYY-MM-DD HH24:MI:SS')`;
    case 'timestamp':
      return `TO_TIMESTAMP(:${n}, '${TS_FORMAT}')`;
    case 'timestamp_tz':
      return `TO_TIMESTAMP_TZ(:${n}, '${TS_FORMAT} TZH:TZM')`;
    case 'json':
      return `JSON(:${n})`;
    default:
      return `:${n}`;
  }
}

/** Binds travel as text; CLOB (and JSON) columns take theirs as a CLOB so their size has no 4,000-byte limit. */
export interface OracleBindDef {
  type: 'string' | 'clob';
  /** Bytes, for strings: the longest value of the statement's rows (at least 1). */
  maxSize?: number;
}

/** One statement and the binds of each row it runs for (`executeMany`). */
export interface OracleStatement {
  sql: string;
  rows: (string | null)[][];
  bindDefs: OracleBindDef[];
}

export interface OracleColumn {
  /** The mapper's name (the key of the rows). */
  name: string;
  /** Oracle's type of the column (DATA_TYPE, or the type the sink created). */
  type: string;
}

function bindsOf(
  columns: readonly OracleColumn[],
  rows: readonly Record<string, unknown>[],
): Pick<OracleStatement, 'rows' | 'bindDefs'> {
  const kinds = columns.map((c) => valueKind(c.type));
  const out = rows.map((row) =>
    columns.map((c, i) => oracleText(row[c.name], kinds[i] as ValueKind, c.name)),
  );
  const bindDefs = kinds.map((kind, i): OracleBindDef => {
    if (kind === 'clob' || kind === 'json') return { type: 'clob' };
    const longest = out.reduce((max, r) => Math.max(max, Buffer.byteLength(r[i] ?? '', 'utf8')), 1);
    return { type: 'string', maxSize: longest };
  });
  return { rows: out, bindDefs };
}

/**
 * MERGE INTO … USING (SELECT :1 … FROM dual) ON (key) WHEN MATCHED THEN
 * UPDATE … WHEN NOT MATCHED THEN INSERT …, run once per row by
 * `executeMany`. The rows share their column list: a column a row lacks is
 * left as it is, not nulled. Only key columns: no WHEN MATCHED clause.
 */
export function mergeStatement(
  ref: OracleTableRef,
  columns: readonly OracleColumn[],
  keyColumns: readonly string[],
  rows: readonly Record<string, unknown>[],
): OracleStatement {
  const q = columns.map((c) => oracleIdent(c.name));
  const source = columns.map((c, i) => `${converted(valueKind(c.type), i + 1)} AS ${q[i]}`).join(', ');
  const on = keyColumns.map((k) => `t.${oracleIdent(k)} = s.${oracleIdent(k)}`).join(' AND ');
  const updates = columns
    .map((c, i) => (keyColumns.includes(c.name) ? null : `t.${q[i]} = s.${q[i]}`))
    .filter((u): u is string => u !== null);
  const sql =
    `MERGE INTO ${qualifiedOracle(ref)} t USING (SELECT ${source} FROM dual) s ON (${on})` +
    (updates.length ? ` WHEN MATCHED THEN UPDATE SET ${updates.join(', ')}` : '') +
    ` WHEN NOT MATCHED THEN INSERT (${q.join(', ')}) VALUES (${q.map((c) => `s.${c}`).join(', ')})`;
  return { sql, ...bindsOf(columns, rows) };
}

/** DELETE by key, run once per key by `executeMany`. */
export function deleteStatement(
  ref: OracleTableRef,
  keys: readonly OracleColumn[],
  rows: readonly Record<string, unknown>[],
): OracleStatement {
  const where = keys
    .map((k, i) => `${oracleIdent(k.name)} = ${converted(valueKind(k.type), i + 1)}`)
    .join(' AND ');
  return { sql: `DELETE FROM ${qualifiedOracle(ref)} WHERE ${where}`, ...bindsOf(keys, rows) };
}

// --- values -----------------------------------------------------------------

const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*([Zz]|[+-]\d{2}(?::?\d{2})?)?$/;

interface Instant {
  /** Wall-clock fields at `offsetMinutes`. */
  wall: Date;
  /** Nanoseconds of the second, 9 digits. */
  fraction: string;
  offsetMinutes: number;
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

function instantOf(value: unknown, column: string, kind: string): Instant {
  if (value instanceof Date || typeof value === 'number') {
    const d = new Date(value);
    if (Number.isNaN(d.getTime()))
      throw new OracleSqlError(`Column "${column}": a value is not a valid ${kind}`);
    return { wall: d, fraction: pad(d.getUTCMilliseconds(), 3).padEnd(9, '0'), offsetMinutes: 0 };
  }
  const m = typeof value === 'string' ? ISO.exec(value.trim()) : null;
  if (!m) throw new OracleSqlError(`Column "${column}": a value is not an ISO 8601 ${kind}`);
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '', zone] = m;
  let offsetMinutes = 0;
  if (zone && zone.toUpperCase() !== 'Z') {
    const digits = zone.slice(1).replace(':', '');
    const minutes = Number(digits.slice(0, 2)) * 60 + Number(digits.slice(2) || '0');
    offsetMinutes = zone.startsWith('-') ? -minutes : minutes;
  }
  const wall = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s)));
  wall.setUTCFullYear(Number(y));
  return { wall, fraction: frac.padEnd(9, '0'), offsetMinutes };
}

const wallText = (d: Date) =>
  `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
  `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`;

/** The same instant's wall clock in UTC (DATE and TIMESTAMP columns have no zone: the session's, UTC). */
const inUtc = (i: Instant) => new Date(i.wall.getTime() - i.offsetMinutes * 60_000);

function offsetText(minutes: number): string {
  const abs = Math.abs(minutes);
  return `${minutes < 0 ? '-' : '+'}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

const jsonText = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/**
 * The text a value is bound as, for a column of `kind` (null stays NULL).
 * Objects and arrays are their JSON; a date-time keeps its UTC offset in a
 * TIMESTAMP WITH TIME ZONE and is moved to UTC in a DATE or TIMESTAMP; a
 * value without an offset is UTC. The message of a refused value names the
 * column, never the value (it may be personal data).
 */
export function oracleText(value: unknown, kind: ValueKind, column: string): string | null {
  if (value === null || value === undefined) return null;
  switch (kind) {
    case 'number':
    case 'binary_double':
    case 'binary_float':
      if (typeof value === 'boolean') return value ? '1' : '0';
      if (typeof value === 'number' && !Number.isFinite(value)) {
        if (kind === 'number') throw new OracleSqlError(`Column "${column}": ${value} is not a NUMBER`);
        return Number.isNaN(value) ? 'NaN' : value > 0 ? 'Inf' : '-Inf';
      }
      if (typeof value === 'object') throw new OracleSqlError(`Column "${column}": a value is not a number`);
      return String(value).trim();
    case 'boolean':
      return typeof value === 'boolean' ? (value ? 'TRUE' : 'FALSE') : String(value);
    case 'date': {
      const i = instantOf(value, column, 'date');
      return wallText(inUtc(i));
    }
    case 'timestamp': {
      const i = instantOf(value, column, 'date-time');
      return `${wallText(inUtc(i))}.${i.fraction}`;
    }
    case 'timestamp_tz': {
      const i = instantOf(value, column, 'date-time');
      return `${wallText(i.wall)}.${i.fraction} ${offsetText(i.offsetMinutes)}`;
    }
    case 'clob':
    case 'json':
      return jsonText(value);
    default:
      if (value instanceof Date) return value.toISOString();
      return typeof value === 'object' ? JSON.stringify(value) : String(value);
  }
}
