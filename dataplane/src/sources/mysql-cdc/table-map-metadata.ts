import { Reader, TYPE, type TableMapEvent } from './binlog-events.js';
import type { MysqlEngine } from '../../systems/mysql/connection.js';
import type { TableColumn } from './columns.js';
import { decodeText } from './row-values.js';

// What a table map says of its columns itself when the server logs its full
// metadata (`binlog_row_metadata=FULL`): names, signedness, collations,
// ENUM and SET members and the primary key. The map describes the rows that
// follow it as they were written, whatever the table's definition is now,
// so changes written before a column was dropped, renamed or retyped are
// read by it (the catalog, which shows only the table as it is now, could
// not say what those rows held).

const SIGNEDNESS = 1;
const DEFAULT_CHARSET = 2;
const COLUMN_CHARSET = 3;
const SET_STR_VALUE = 5;
const ENUM_STR_VALUE = 6;
const SIMPLE_PRIMARY_KEY = 8;
const PRIMARY_KEY_WITH_PREFIX = 9;
const ENUM_AND_SET_DEFAULT_CHARSET = 10;
const ENUM_AND_SET_COLUMN_CHARSET = 11;

/** The map's own description of its columns, before collations are named. */
export interface MapDescription {
  names: string[];
  /** Per column: true when unsigned; undefined for a column that is not numeric. */
  unsigned: (boolean | undefined)[];
  /** Per column: the collation id of a text, ENUM or SET column. */
  collations: (number | undefined)[];
  /** Per column: the members of an ENUM or SET, as the bytes the log holds. */
  members: (Buffer[] | undefined)[];
  /** Primary-key column positions, in key order; empty when the map names none. */
  primaryKey: number[];
}

/** The type a column really has: an ENUM or SET is logged as STRING, its real type in the metadata. */
function realType(map: TableMapEvent, i: number): number {
  const type = map.types[i]!;
  return type === TYPE.STRING ? map.meta[i]!.realType : type;
}

const NUMERIC: readonly number[] = [
  TYPE.TINY,
  TYPE.SHORT,
  TYPE.INT24,
  TYPE.LONG,
  TYPE.LONGLONG,
  TYPE.NEWDECIMAL,
  TYPE.FLOAT,
  TYPE.DOUBLE,
];

function isCharacter(type: number, engine: MysqlEngine): boolean {
  if (type === TYPE.GEOMETRY) return engine === 'MariaDB';
  return type === TYPE.STRING || type === TYPE.VAR_STRING || type === TYPE.VARCHAR || type === TYPE.BLOB;
}

const isEnumOrSet = (type: number) => type === TYPE.ENUM || type === TYPE.SET;

/** Collation ids of the columns `included` picks, from a DEFAULT_CHARSET- or COLUMN_CHARSET-shaped field. */
function collationsOf(
  count: number,
  included: (i: number) => boolean,
  defaults: Buffer | undefined,
  perColumn: Buffer | undefined,
): (number | undefined)[] {
  const out: (number | undefined)[] = new Array<number | undefined>(count).fill(undefined);
  const picked = Array.from({ length: count }, (_, i) => i).filter(included);
  if (defaults) {
    // The default collation, then (index among the picked columns, collation) for those that differ.
    const r = new Reader(defaults);
    const fallback = r.lenenc();
    const differing = new Map<number, number>();
    while (r.pos < r.buf.length) differing.set(r.lenenc(), r.lenenc());
    picked.forEach((column, k) => (out[column] = differing.get(k) ?? fallback));
  } else if (perColumn) {
    const r = new Reader(perColumn);
    for (const column of picked) out[column] = r.lenenc();
  }
  return out;
}

/** The map's description of its columns; null when it does not name them (metadata less than FULL). */
export function describeMap(map: TableMapEvent, engine: MysqlEngine): MapDescription | null {
  if (!map.names) return null;
  const count = map.types.length;
  const field = (type: number) => map.optional.find((f) => f.type === type)?.value;
  const unsigned: (boolean | undefined)[] = new Array<boolean | undefined>(count).fill(undefined);
  const signedness = field(SIGNEDNESS);
  if (signedness) {
    let k = 0;
    for (let i = 0; i < count; i++) {
      if (!NUMERIC.includes(realType(map, i))) continue;
      // One bit per numeric column, the most significant bit first.
      const byte = signedness[k >> 3] ?? 0;
      unsigned[i] = ((byte >> (7 - (k & 7))) & 1) === 1;
      k++;
    }
  }
  const text = collationsOf(
    count,
    (i) => isCharacter(realType(map, i), engine),
    field(DEFAULT_CHARSET),
    field(COLUMN_CHARSET),
  );
  const enumSet = collationsOf(
    count,
    (i) => isEnumOrSet(realType(map, i)),
    field(ENUM_AND_SET_DEFAULT_CHARSET),
    field(ENUM_AND_SET_COLUMN_CHARSET),
  );
  const members: (Buffer[] | undefined)[] = new Array<Buffer[] | undefined>(count).fill(undefined);
  for (const [type, kind] of [
    [ENUM_STR_VALUE, TYPE.ENUM],
    [SET_STR_VALUE, TYPE.SET],
  ] as const) {
    const value = field(type);
    if (!value) continue;
    const r = new Reader(value);
    for (let i = 0; i < count && r.pos < r.buf.length; i++) {
      if (realType(map, i) !== kind) continue;
      const n = r.lenenc();
      members[i] = Array.from({ length: n }, () => r.bytes(r.lenenc()));
    }
  }
  const primaryKey: number[] = [];
  const simple = field(SIMPLE_PRIMARY_KEY);
  const prefixed = field(PRIMARY_KEY_WITH_PREFIX);
  if (simple) {
    const r = new Reader(simple);
    while (r.pos < r.buf.length) primaryKey.push(r.lenenc());
  } else if (prefixed) {
    const r = new Reader(prefixed);
    while (r.pos < r.buf.length) {
      primaryKey.push(r.lenenc());
      r.lenenc(); // the prefix length: the key is the column all the same
    }
  }
  return {
    names: map.names,
    unsigned,
    collations: text.map((c, i) => c ?? enumSet[i]),
    members,
    primaryKey,
  };
}

/** information_schema's DATA_TYPE for a column the map alone describes. */
function dataTypeOf(type: number, binary: boolean): string {
  switch (type) {
    case TYPE.TINY:
      return 'tinyint';
    case TYPE.SHORT:
      return 'smallint';
    case TYPE.INT24:
      return 'mediumint';
    case TYPE.LONG:
      return 'int';
    case TYPE.LONGLONG:
      return 'bigint';
    case TYPE.FLOAT:
      return 'float';
    case TYPE.DOUBLE:
      return 'double';
    case TYPE.DECIMAL:
    case TYPE.NEWDECIMAL:
      return 'decimal';
    case TYPE.YEAR:
      return 'year';
    case TYPE.DATE:
    case TYPE.NEWDATE:
      return 'date';
    case TYPE.TIME:
    case TYPE.TIME2:
      return 'time';
    case TYPE.DATETIME:
    case TYPE.DATETIME2:
      return 'datetime';
    case TYPE.TIMESTAMP:
    case TYPE.TIMESTAMP2:
      return 'timestamp';
    case TYPE.BIT:
      return 'bit';
    case TYPE.ENUM:
      return 'enum';
    case TYPE.SET:
      return 'set';
    case TYPE.JSON:
      return 'json';
    case TYPE.GEOMETRY:
      return 'geometry';
    case TYPE.STRING:
      return binary ? 'binary' : 'char';
    case TYPE.VARCHAR:
    case TYPE.VAR_STRING:
      return binary ? 'varbinary' : 'varchar';
    default:
      return binary ? 'blob' : 'text';
  }
}

/** The binary pseudo character set's collation: bytes, not text. */
const BINARY_COLLATION = 63;

/**
 * Column `i` as the map describes it, or what it lacks in words: its
 * collation's character set comes from `charsets` (the server's collations
 * by id).
 */
export function columnOfMap(
  map: TableMapEvent,
  d: MapDescription,
  i: number,
  charsets: ReadonlyMap<number, string>,
): TableColumn | string {
  const type = realType(map, i);
  const collation = d.collations[i];
  const binary = collation === BINARY_COLLATION;
  let charset: string | null = null;
  if (collation !== undefined && !binary) {
    const named = charsets.get(collation);
    if (named === undefined)
      return `column ${d.names[i]} has collation ${collation}, which the server does not list`;
    charset = named;
  } else if (collation === undefined && (isCharacter(type, 'MySQL') || isEnumOrSet(type))) {
    return `the log does not give the character set of column ${d.names[i]}`;
  }
  const dataType = dataTypeOf(type, binary);
  const members = (d.members[i] ?? []).map((m) => decodeText(m, charset));
  return {
    name: d.names[i]!,
    dataType,
    columnType: dataType,
    unsigned: d.unsigned[i] ?? false,
    charset,
    members,
    json: type === TYPE.JSON,
    binaryLength: dataType === 'binary' ? map.meta[i]!.length : 0,
  };
}
