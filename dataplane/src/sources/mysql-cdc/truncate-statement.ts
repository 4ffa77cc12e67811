import { ddlStatement } from './ddl-statement.js';

// The table a `TRUNCATE [TABLE] name` statement of the binary log empties,
// read by the DDL statement reader (comments, quoting and names as the
// server logs them). MySQL and MariaDB truncate one table per statement.

/**
 * `database.table` of the table `sql` truncates, `schema` (the event's
 * default database) when the name has none; null when `sql` is not a
 * TRUNCATE or names no database and has none by default.
 */
export function truncatedTable(sql: string, schema: string): string | null {
  const ddl = ddlStatement(sql, schema);
  return ddl?.verb === 'TRUNCATE' ? (ddl.tables[0] ?? null) : null;
}
