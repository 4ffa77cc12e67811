import type { SinkRecord } from '../src/contracts.js';

// Sink records as the target loop hands them over, for the sinks' tests.

/** An upsert of `row` into `table`, keyed by `keyColumns` (`id` unless said). */
export const upsert = (table: string, row: Record<string, unknown>, keyColumns = ['id']): SinkRecord => ({
  op: 'upsert',
  table,
  row,
  keyColumns,
});

/** A delete of the row of `table` whose key columns `row` holds. */
export const del = (table: string, row: Record<string, unknown>, keyColumns = ['id']): SinkRecord => ({
  op: 'delete',
  table,
  row,
  keyColumns,
});

/** A truncate of `table`: every row goes. */
export const truncate = (table: string, keyColumns = ['id']): SinkRecord => ({
  op: 'truncate',
  table,
  row: {},
  keyColumns,
});
