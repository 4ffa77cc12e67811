import type mysql from 'mysql2/promise';

// A captured table's columns as the server's catalog describes them: the
// binary log's table map gives only each column's storage type, so names,
// signedness, character sets, ENUM and SET members and the JSON alias come
// from information_schema (read again after a table's definition changed).

export interface TableColumn {
  name: string;
  /** information_schema DATA_TYPE, lower case (`int`, `varchar`, `json`, …). */
  dataType: string;
  /** information_schema COLUMN_TYPE (`int(10) unsigned`, `enum('a','b')`, `binary(16)`). */
  columnType: string;
  unsigned: boolean;
  /** Character set of a text column; null for binary strings and non-text types. */
  charset: string | null;
  /** Members of an ENUM or SET, in order. */
  members: string[];
  /** JSON: MySQL's type, or MariaDB's alias (LONGTEXT with a json_valid check). */
  json: boolean;
  /** Declared length of BINARY(n), whose trailing zero bytes the binary log leaves out. */
  binaryLength: number;
}

export interface TableShape {
  schema: string;
  table: string;
  columns: TableColumn[];
  /** Primary-key column names in key order; empty when the table has none. */
  primaryKey: string[];
}

/** A column from what the catalog (or a recorded definition) says of it; the rest follows from its type. */
export function tableColumn(
  name: string,
  dataType: string,
  columnType: string,
  charset: string | null,
  json: boolean,
): TableColumn {
  return {
    name,
    dataType,
    columnType,
    unsigned: /\bunsigned\b/i.test(columnType),
    charset,
    members: dataType === 'enum' || dataType === 'set' ? parseMembers(columnType) : [],
    json,
    binaryLength: dataType === 'binary' ? Number(/\((\d+)\)/.exec(columnType)?.[1] ?? 0) : 0,
  };
}

function isJson(dataType: string, name: string, jsonChecked: ReadonlySet<string>): boolean {
  return dataType === 'json' || (dataType === 'longtext' && jsonChecked.has(name));
}

/** `'a','b''c'` of `enum('a','b''c')` or `set(...)` → its members. */
export function parseMembers(columnType: string): string[] {
  const open = columnType.indexOf('(');
  const body = columnType.slice(open + 1, columnType.lastIndexOf(')'));
  const out: string[] = [];
  const re = /'((?:[^']|'')*)'/g;
  for (let m = re.exec(body); m; m = re.exec(body)) out.push(m[1]!.replace(/''/g, "'"));
  return out;
}

/** The columns and key of `schema.table`; null when the server has no such table (or hides it). */
export async function readTableShape(
  conn: mysql.Connection,
  schema: string,
  table: string,
): Promise<TableShape | null> {
  const [rows] = await conn.query(
    `select column_name as name, data_type as data_type, column_type as column_type,
            character_set_name as charset, column_key as column_key
       from information_schema.columns
      where table_schema = ? and table_name = ?
      order by ordinal_position`,
    [schema, table],
  );
  const cols = rows as {
    name: string;
    data_type: string;
    column_type: string;
    charset: string | null;
    column_key: string;
  }[];
  if (cols.length === 0) return null;
  const [keyRows] = await conn.query(
    `select column_name as name from information_schema.key_column_usage
      where table_schema = ? and table_name = ? and constraint_name = 'PRIMARY'
      order by ordinal_position`,
    [schema, table],
  );
  // MariaDB's JSON is LONGTEXT with a CHECK (json_valid(`col`)) it adds itself.
  let jsonChecked = new Set<string>();
  const [checks] = await conn
    .query(
      `select check_clause as clause from information_schema.check_constraints
        where constraint_schema = ? and table_name = ?`,
      [schema, table],
    )
    .catch(() => [[]]);
  jsonChecked = new Set(
    (checks as { clause: string }[]).flatMap((c) => {
      const m = /^json_valid\(`((?:[^`]|``)+)`\)$/i.exec(c.clause.trim());
      return m ? [m[1]!.replace(/``/g, '`')] : [];
    }),
  );
  const columns = cols.map((c) => {
    const dataType = c.data_type.toLowerCase();
    return tableColumn(c.name, dataType, c.column_type, c.charset, isJson(dataType, c.name, jsonChecked));
  });
  return {
    schema,
    table,
    columns,
    primaryKey: (keyRows as { name: string }[]).map((k) => k.name),
  };
}

/** The server's collations by id → their character set: a table map names a column's collation by id. */
export async function readCollations(conn: mysql.Connection): Promise<Map<number, string>> {
  const [rows] = await conn.query(
    'select id, character_set_name as charset from information_schema.collations where id is not null',
  );
  const byId = new Map<number, string>();
  for (const r of rows as { id: number; charset: string }[]) byId.set(Number(r.id), r.charset);
  // MariaDB 10.10+ lists its UCA 14.0 collations' ids here only.
  const [more] = await conn
    .query(
      `select id, character_set_name as charset from information_schema.collation_character_set_applicability
        where id is not null`,
    )
    .catch(() => [[]]);
  for (const r of more as { id: number; charset: string }[]) byId.set(Number(r.id), r.charset);
  return byId;
}
