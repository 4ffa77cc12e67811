import { tableColumn, type TableShape } from './columns.js';
import type { BinlogPosition } from './position.js';

// The definitions of the captured tables recorded with each position: a
// binary log without column names (`binlog_row_metadata` other than FULL)
// gives only storage types, and the catalog shows a table only as it is
// now. A worker that restarts reads the changes after its position with the
// definitions in force there, not with the catalog's newer ones, so changes
// written before an ALTER TABLE it had not read yet are named right; the
// ALTER itself, read from the log, has the definition read anew.

/** A captured table as the capture knew it at a position. */
export interface CapturedTable {
  /** Its definition; null after a DDL statement until the catalog is read again at its next table map. */
  shape: TableShape | null;
  /** The last DDL statement read that names it, as errors quote it. */
  ddl?: string;
}

/** A position and, by `schema.table`, the captured tables' definitions there. */
export interface RecordedPosition extends BinlogPosition {
  tables?: Record<string, CapturedTable>;
}

/** A column as recorded: name, DATA_TYPE, COLUMN_TYPE, character set, JSON (the rest follows from them). */
type PackedColumn = [string, string, string, string | null, 0 | 1];

interface PackedTable {
  schema: string;
  table: string;
  columns: PackedColumn[];
  key: string[];
  ddl?: string;
}

/** The tables' definitions as a position record holds them (compact: a record is written every batch). */
export function packTables(tables: Readonly<Record<string, CapturedTable>>): Record<string, PackedTable> {
  const out: Record<string, PackedTable> = {};
  for (const [entry, t] of Object.entries(tables)) {
    const [schema = '', ...rest] = entry.split('.');
    out[entry] = {
      schema: t.shape?.schema ?? schema,
      table: t.shape?.table ?? rest.join('.'),
      columns: (t.shape?.columns ?? []).map((c) => [
        c.name,
        c.dataType,
        c.columnType,
        c.charset,
        c.json ? 1 : 0,
      ]),
      key: t.shape?.primaryKey ?? [],
      ...(t.ddl !== undefined ? { ddl: t.ddl } : {}),
    };
  }
  return out;
}

/** What `packTables` wrote, read back; a table recorded without columns has no known definition. */
export function unpackTables(packed: unknown): Record<string, CapturedTable> | undefined {
  if (typeof packed !== 'object' || packed === null) return undefined;
  const out: Record<string, CapturedTable> = {};
  for (const [entry, t] of Object.entries(packed as Record<string, PackedTable>)) {
    const shape: TableShape | null =
      t.columns.length === 0
        ? null
        : {
            schema: t.schema,
            table: t.table,
            columns: t.columns.map(([name, dataType, columnType, charset, json]) =>
              tableColumn(name, dataType, columnType, charset, json === 1),
            ),
            primaryKey: t.key,
          };
    out[entry] = { shape, ...(t.ddl !== undefined ? { ddl: t.ddl } : {}) };
  }
  return out;
}

/** The position alone (what monitoring and messages use). */
export const positionOf = (p: BinlogPosition): BinlogPosition => ({
  file: p.file,
  offset: p.offset,
  gtid: p.gtid,
});
