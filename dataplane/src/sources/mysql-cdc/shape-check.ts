import { TYPE, type TableMapEvent } from './binlog-events.js';
import type { TableColumn, TableShape } from './columns.js';

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

/**
 * The table's columns that the map's columns are, in the map's order, or
 * what does not fit, in words. With the column names in the log
 * (`binlog_row_metadata=FULL`) columns are matched by name, so the changes
 * written before columns were added, dropped or reordered are read right;
 * without them by position, which follows columns added at the end since
 * (ALTER TABLE … ADD COLUMN) and refuses any other difference it can see.
 */
export function columnsOfMap(map: TableMapEvent, shape: TableShape): TableColumn[] | string {
  const columns: TableColumn[] = [];
  if (!map.names && map.types.length > shape.columns.length) {
    return `${map.types.length} columns in the log, ${shape.columns.length} in the table`;
  }
  for (let i = 0; i < map.types.length; i++) {
    const name = map.names?.[i];
    const col = name === undefined ? shape.columns[i] : shape.columns.find((c) => c.name === name);
    if (!col) return `column ${name ?? i + 1} of the log is not in the table`;
    const type = map.types[i]!;
    if (!fits(type, map.meta[i]!.realType, col)) {
      return `column ${i + 1} (${col.name}) is ${col.columnType} in the table but of log type ${type} in the log`;
    }
    columns.push(col);
  }
  return columns;
}
