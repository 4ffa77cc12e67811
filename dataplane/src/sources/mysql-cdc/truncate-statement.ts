import { GAP, NAME, unquote } from './ddl-statement.js';

// The table a `TRUNCATE [TABLE] name` statement of the binary log empties.
// The server logs the statement as the client wrote it: comments before and
// inside it, any case, `quoted` (`` for a backquote inside), "quoted" (under
// ANSI_QUOTES; otherwise such a statement is refused and never logged) or
// bare names, with or without the database, which the Query event's default
// database then supplies. MySQL and MariaDB truncate one table per statement.

const STATEMENT = new RegExp(
  String.raw`^${GAP}TRUNCATE(?![\w$])${GAP}(?:TABLE(?![\w$])${GAP})?(${NAME})(?:${GAP}\.${GAP}(${NAME}))?${GAP}(?:;|WAIT\b|NOWAIT\b|$)`,
  'i',
);

/**
 * `database.table` of the table `sql` truncates, `schema` (the event's
 * default database) when the name has none; null when `sql` is not a
 * TRUNCATE or names no database and has none by default.
 */
export function truncatedTable(sql: string, schema: string): string | null {
  const m = STATEMENT.exec(sql);
  if (!m) return null;
  const first = unquote(m[1] as string);
  if (m[2] !== undefined) return `${first}.${unquote(m[2])}`;
  return schema === '' ? null : `${schema}.${first}`;
}
