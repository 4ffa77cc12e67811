import { describe, expect, it } from '@jest/globals';
import { parseTableMap } from './binlog-events.js';
import { column } from './__tests__/table-column.js';
import { columnsOfMap } from './shape-check.js';
import { columnOfMap, describeMap } from './table-map-metadata.js';

// A table map with the full optional metadata, in the layout MySQL's
// Table_map_log_event and MariaDB write it (type, length, value after the
// null bitmap): `id INT UNSIGNED PRIMARY KEY, nm VARCHAR(40) latin1,
// e ENUM('a','b') utf8mb4, bin VARBINARY(8)`.

const hexText = (s: string) => Buffer.from(s).toString('hex');
const lenencText = (s: string) => Buffer.from([Buffer.byteLength(s)]).toString('hex') + hexText(s);
const field = (type: number, valueHex: string) =>
  Buffer.from([type, valueHex.length / 2]).toString('hex') + valueHex;

const MAP = [
  '2a0000000000', // table id
  '0100', // flags
  '02' + hexText('db') + '00',
  '01' + hexText('t') + '00',
  '04', // columns
  '030ffe0f', // LONG, VARCHAR, STRING (an ENUM), VARCHAR
  '06',
  '2800' + 'f701' + '0800', // VARCHAR(40); ENUM of 1 byte; VARBINARY(8)
  '0e', // null bitmap
  field(1, '80'), // SIGNEDNESS: the one numeric column unsigned
  field(2, '08' + '01' + '3f'), // DEFAULT_CHARSET: latin1 (8); the second text column binary (63)
  field(4, ['id', 'nm', 'e', 'bin'].map(lenencText).join('')),
  field(6, '02' + lenencText('a') + lenencText('b')), // ENUM_STR_VALUE
  field(8, '00'), // SIMPLE_PRIMARY_KEY: column 0
  field(10, '2d'), // ENUM_AND_SET_DEFAULT_CHARSET: utf8mb4 (45)
].join('');

const charsets = new Map([
  [8, 'latin1'],
  [45, 'utf8mb4'],
]);

describe('a table map that describes its own columns (binlog_row_metadata=FULL)', () => {
  const map = parseTableMap(Buffer.from(MAP, 'hex'));
  const description = describeMap(map, 'MariaDB');

  it('reads names, signedness, collations, members and the primary key', () => {
    expect(description).toEqual({
      names: ['id', 'nm', 'e', 'bin'],
      unsigned: [true, undefined, undefined, undefined],
      collations: [undefined, 8, 45, 63],
      members: [undefined, undefined, [Buffer.from('a'), Buffer.from('b')], undefined],
      primaryKey: [0],
    });
  });

  it('describes each column as the rows after it were written', () => {
    const columns = map.types.map((_, i) => columnOfMap(map, description!, i, charsets));
    expect(columns).toEqual([
      column({ name: 'id', dataType: 'int', columnType: 'int', unsigned: true }),
      column({ name: 'nm', dataType: 'varchar', columnType: 'varchar', charset: 'latin1' }),
      column({ name: 'e', dataType: 'enum', columnType: 'enum', charset: 'utf8mb4', members: ['a', 'b'] }),
      column({ name: 'bin', dataType: 'varbinary', columnType: 'varbinary' }),
    ]);
  });

  it('says what it cannot describe: a collation the server does not list', () => {
    expect(columnOfMap(map, description!, 1, new Map())).toBe(
      'column nm has collation 8, which the server does not list',
    );
  });

  it('takes the catalog column of the same name and type, the map alone for one renamed or retyped since', () => {
    const shape = {
      schema: 'db',
      table: 't',
      columns: [
        column({ name: 'id', dataType: 'int', columnType: 'int(10) unsigned', unsigned: true }),
        // `nm` was renamed, `bin` retyped to INT since these changes were written.
        column({ name: 'name', dataType: 'varchar', columnType: 'varchar(40)', charset: 'latin1' }),
        column({
          name: 'e',
          dataType: 'enum',
          columnType: "enum('a','b','c')",
          charset: 'utf8mb4',
          members: ['a', 'b', 'c'],
        }),
        column({ name: 'bin', dataType: 'int', columnType: 'int(11)' }),
      ],
      primaryKey: ['id'],
    };
    const matched = columnsOfMap(map, shape, { description: description!, charsets });
    expect(matched).toEqual({
      columns: [
        shape.columns[0],
        column({ name: 'nm', dataType: 'varchar', columnType: 'varchar', charset: 'latin1' }),
        // The catalog's column, with the members the log had when these rows were written.
        { ...shape.columns[2], members: ['a', 'b'] },
        column({ name: 'bin', dataType: 'varbinary', columnType: 'varbinary' }),
      ],
      keyColumns: ['id'],
    });
    // Without the description, the renamed column cannot be matched.
    expect(columnsOfMap(map, shape)).toBe('column nm of the log is not in the table');
  });

  it('keys the events by the map’s primary key when the table’s key columns are not among the map’s', () => {
    const shape = { schema: 'db', table: 't', columns: [], primaryKey: ['key_renamed'] };
    const matched = columnsOfMap(map, shape, { description: description!, charsets });
    expect(typeof matched !== 'string' && matched.keyColumns).toEqual(['id']);
  });
});
