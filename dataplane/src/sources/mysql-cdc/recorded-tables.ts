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
  /** The DDL statements read that name it, since its definition was last read (or the last one). */
  ddl?: string;
  /** While `shape` is null: the definition before those statements (catalog-check.ts). */
  before?: TableShape;
}

/** A position and, by `schema.table`, the captured tables' definitions there. */
export interface RecordedPosition extends BinlogPosition {
  tables?: Record<string, CapturedTable>;
}

/** A column as recorded: name, DATA_TYPE, COLUMN_TYPE, character set, JSON (the rest follows from them). */
type PackedColumn = [string, string, string, string | null, 0 | 1];

interface PackedShape {
  columns: PackedColumn[];
  key: string[];
}

interface PackedTable extends PackedShape {
  schema: string;
  table: string;
  ddl?: string;
  before?: PackedShape;
}

const packShape = (shape: TableShape | null | undefined): PackedShape => ({
  columns: (shape?.columns ?? []).map((c) => [c.name, c.dataType, c.columnType, c.charset, c.json ? 1 : 0]),
  key: shape?.primaryKey ?? [],
});

function unpackShape(schema: string, table: string, packed: PackedShape): TableShape | null {
  if (packed.columns.length === 0) return null;
  return {
    schema,
    table,
    columns: packed.columns.map(([name, dataType, columnType, charset, json]) =>
      tableColumn(name, dataType, columnType, charset, json === 1),
    ),
    primaryKey: packed.key,
  };
}

/** The tables' definitions as a position record holds them (compact: a record is written every batch). */
export function packTables(tables: Readonly<Record<string, CapturedTable>>): Record<string, PackedTable> {
  const out: Record<string, PackedTable> = {};
  for (const [entry, t] of Object.entries(tables)) {
    const [schema = '', ...rest] = entry.split('.');
    out[entry] = {
      schema: t.shape?.schema ?? schema,
      table: t.shape?.table ?? rest.join('.'),
      ...packShape(t.shape),
      ...(t.ddl !== undefined ? { ddl: t.ddl } : {}),
      ...(t.before ? { before: packShape(t.before) } : {}),
    };
  }
  return out;
}

/** What `packTables` wrote, read back; a table recorded without columns has no known definition. */
export function unpackTables(packed: unknown): Record<string, CapturedTable> | undefined {
  if (typeof packed !== 'object' || packed === null) return undefined;
  const out: Record<string, CapturedTable> = {};
  for (const [entry, t] of Object.entries(packed as Record<string, PackedTable>)) {
    const before = t.before && unpackShape(t.schema, t.table, t.before);
    out[entry] = {
      shape: unpackShape(t.schema, t.table, t),
      ...(t.ddl !== undefined ? { ddl: t.ddl } : {}),
      ...(before ? { before } : {}),
    };
  }
  return out;
}

/** A copy of `t` with only the fields it has (a position record leaves absent fields out). */
export function capturedTable(t: CapturedTable): CapturedTable {
  return {
    shape: t.shape,
    ...(t.ddl !== undefined ? { ddl: t.ddl } : {}),
    ...(t.before ? { before: t.before } : {}),
  };
}
