import type { TableColumn } from '../columns.js';

/** A column of the catalog for decoding tests: an INT unless `c` says otherwise. */
export const column = (c: Partial<TableColumn> = {}): TableColumn => ({
  name: 'c',
  dataType: 'int',
  columnType: 'int',
  unsigned: false,
  charset: null,
  members: [],
  json: false,
  binaryLength: 0,
  ...c,
});
