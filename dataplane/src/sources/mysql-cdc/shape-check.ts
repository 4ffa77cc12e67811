import { TYPE, type TableMapEvent } from './binlog-events.js';
import type { TableColumn, TableShape } from './columns.js';
import { columnOfMap, type MapDescription } from './table-map-metadata.js';

// Which of a table's columns (its definition read from information_schema)
// the columns of a table map of the binary log are: the values of a row are
// read by the log's types but named and interpreted by the catalog, which
// shows the table as it is now. A table altered after the changes being read
// were written could mislabel them; what cannot be matched is refused,
// never guessed.

/** The storage types each information_schema DATA_TYPE may have in the log. */
const STORAGE: Record<string, readonly number[]> = {
  tinyint: [TYPE.TINY],
  bool: [TYPE.TINY],
  smallint: [TYPE.SHORT],
  mediumint: [TYPE.INT24],
  int: [TYPE.LONG],
  integer: [TYPE.LONG],
  bigint: [TYPE.LONGLONG],
  float: [TYPE.FLOAT],
  double: [TYPE.DOUBLE],
  real: [TYPE.DOUBLE],
  decimal: [TYPE.NEWDECIMAL],
  numeric: [TYPE.NEWDECIMAL],
  year: [TYPE.YEAR],
  date: [TYPE.DATE, TYPE.NEWDATE],
  time: [TYPE.TIME, TYPE.TIME2],
  datetime: [TYPE.DATETIME, TYPE.DATETIME2],
  timestamp: [TYPE.TIMESTAMP, TYPE.TIMESTAMP2],
  bit: [TYPE.BIT],
  char: [TYPE.STRING],
  binary: [TYPE.STRING],
  varchar: [TYPE.VARCHAR, TYPE.VAR_STRING],
  varbinary: [TYPE.VARCHAR, TYPE.VAR_STRING],
  enum: [TYPE.STRING],
  set: [TYPE.STRING],
  json: [TYPE.JSON, TYPE.BLOB],
};
const BLOBS = [TYPE.BLOB, TYPE.TINY_BLOB, TYPE.MEDIUM_BLOB, TYPE.LONG_BLOB];
const SPATIAL = [
  'geometry',
  'point',
  'linestring',
  'polygon',
  'multipoint',
  'multilinestring',
  'multipolygon',
  'geometrycollection',
];

function fits(type: number, realType: number, col: TableColumn): boolean {
  let allowed = STORAGE[col.dataType];
  if (!allowed && /text|blob/.test(col.dataType)) allowed = BLOBS;
  if (!allowed && SPATIAL.includes(col.dataType)) allowed = [TYPE.GEOMETRY];
  if (!allowed) return true;
  if (col.dataType === 'enum') return type === TYPE.STRING && realType === TYPE.ENUM;
  if (col.dataType === 'set') return type === TYPE.STRING && realType === TYPE.SET;
  return allowed.includes(type);
}

/** The columns of a table map, and the key its events carry. */
export interface MapColumns {
  columns: TableColumn[];
  /** Key column names: the table's primary key, or every column of a table without one. */
  keyColumns: string[];
}

/**
 * The columns of the map's rows, in the map's order, or what does not fit,
 * in words.
 *
 * With the map's own description (`binlog_row_metadata=FULL`, `described`)
 * each column is the table's column of the same name when that one still has
 * the map's storage type (the catalog adds what a map cannot say: MariaDB's
 * JSON alias), with the map's signedness, character set and members, which
 * are those of the rows that follow it; a column the table no longer has
 * under that name or type (dropped, renamed, retyped since these changes
 * were written) is the map's description alone. Every change is so read as
 * it was written.
 *
 * Without it, columns are matched by position, which follows columns added
 * at the end since (ALTER TABLE … ADD COLUMN) and refuses any other
 * difference it can see.
 */
export function columnsOfMap(
  map: TableMapEvent,
  shape: TableShape,
  described?: { description: MapDescription; charsets: ReadonlyMap<number, string> },
): MapColumns | string {
  const columns: TableColumn[] = [];
  if (!map.names && map.types.length > shape.columns.length) {
    return `${map.types.length} columns in the log, ${shape.columns.length} in the table`;
  }
  for (let i = 0; i < map.types.length; i++) {
    const name = map.names?.[i];
    const col = name === undefined ? shape.columns[i] : shape.columns.find((c) => c.name === name);
    const type = map.types[i]!;
    const fitting = col && fits(type, map.meta[i]!.realType, col) ? col : undefined;
    if (described) {
      const own = columnOfMap(map, described.description, i, described.charsets);
      if (typeof own === 'string') return own;
      columns.push(
        fitting ? { ...fitting, unsigned: own.unsigned, charset: own.charset, members: own.members } : own,
      );
      continue;
    }
    if (!col) return `column ${name ?? i + 1} of the log is not in the table`;
    if (!fitting) {
      return `column ${i + 1} (${col.name}) is ${col.columnType} in the table but of log type ${type} in the log`;
    }
    columns.push(col);
  }
  const names = new Set(columns.map((c) => c.name));
  let keyColumns = shape.primaryKey;
  if (!keyColumns.every((k) => names.has(k))) {
    const key = described?.description.primaryKey ?? [];
    keyColumns = key.length > 0 ? key.map((k) => columns[k]!.name) : [];
  }
  return { columns, keyColumns: keyColumns.length > 0 ? keyColumns : [...names] };
}
