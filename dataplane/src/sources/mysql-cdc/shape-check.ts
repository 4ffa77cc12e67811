import { TYPE, type TableMapEvent } from './binlog-events.js';
import type { TableShape } from './columns.js';

// Whether a table map of the binary log fits the table's definition read
// from information_schema: the values of a row are read by the log's types
// but named and interpreted by the catalog, which shows the table as it is
// now. A table altered after the changes being read were written would
// mislabel them; that is refused, never guessed.

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

/** What does not fit, in words; null when the map and the definition agree. */
export function binlogMismatch(map: TableMapEvent, shape: TableShape): string | null {
  if (map.types.length !== shape.columns.length) {
    return `${map.types.length} columns in the log, ${shape.columns.length} in the table`;
  }
  for (let i = 0; i < map.types.length; i++) {
    const col = shape.columns[i]!;
    const type = map.types[i]!;
    const real = map.meta[i]!.realType;
    let allowed = STORAGE[col.dataType];
    if (!allowed && /text|blob/.test(col.dataType)) allowed = BLOBS;
    if (!allowed && SPATIAL.includes(col.dataType)) allowed = [TYPE.GEOMETRY];
    if (!allowed) continue;
    const ok =
      allowed.includes(type) ||
      (type === TYPE.STRING && allowed.includes(TYPE.STRING)) ||
      (col.dataType === 'enum' && real === TYPE.ENUM) ||
      (col.dataType === 'set' && real === TYPE.SET);
    if (
      !ok ||
      (col.dataType === 'enum' && real !== TYPE.ENUM) ||
      (col.dataType === 'set' && real !== TYPE.SET)
    ) {
      return `column ${i + 1} (${col.name}) is ${col.columnType} in the table but of log type ${type} in the log`;
    }
  }
  return null;
}
