import type { TableShape } from './columns.js';

// Without column names in the binary log, a DDL statement read from the log
// is followed by reading the table's definition from the catalog at its next
// table map. The catalog shows the table as it is now, which is the
// definition right after the statement only when no later statement changed
// it: a worker that is behind (or was stopped) may find it already altered
// again, and a rename keeps every storage type, so the rows between the
// statements would fit it by position and be published under the later
// names. What the statements read since the last known definition do not
// name cannot have been changed by them: a column that differs and is not
// named shows that the catalog is ahead, and the capture refuses to guess.

/** Columns of `before` and `after` that differ: added, removed, retyped, or in or out of the primary key. */
function differingColumns(before: TableShape, after: TableShape): string[] {
  const names = new Set<string>();
  for (const c of before.columns) {
    const now = after.columns.find((a) => a.name === c.name);
    if (!now || now.columnType !== c.columnType || now.dataType !== c.dataType) names.add(c.name);
  }
  for (const c of after.columns) if (!before.columns.some((b) => b.name === c.name)) names.add(c.name);
  const keyBefore = new Set(before.primaryKey);
  const keyAfter = new Set(after.primaryKey);
  for (const k of keyBefore) if (!keyAfter.has(k)) names.add(k);
  for (const k of keyAfter) if (!keyBefore.has(k)) names.add(k);
  return [...names];
}

/** Whether `statements` name the column `name` (as an identifier, quoted or not, in any case). */
function names(statements: string, name: string): boolean {
  const plain = statements.replace(/`/g, '');
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![\\w$])${escaped}(?![\\w$])`, 'i').test(plain);
}

/** The columns in which the catalog's definition `now` differs from `before` that `statements` do not name. */
export function unexplainedChanges(before: TableShape, now: TableShape, statements: string): string[] {
  return differingColumns(before, now).filter((c) => !names(statements, c));
}
