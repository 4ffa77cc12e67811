import { describe, expect, it } from '@jest/globals';
import { column } from './__tests__/table-column.js';
import type { TableShape } from './columns.js';
import { boundAfter, boundFromJson, boundToJson } from './key-pages.js';

// The bound of a keyset page as a backfill records it between pages (JSON)
// and reads it back: text keys stay text, binary and BIT keys go as hex and
// come back as the same bytes (sent as a hex literal, compared as bytes).

const shape: TableShape = {
  schema: 'shop',
  table: 'orders',
  columns: [
    column({ name: 'region', dataType: 'char', columnType: 'char(2)', charset: 'utf8mb4' }),
    column({ name: 'code', dataType: 'binary', columnType: 'binary(2)', binaryLength: 2 }),
    column({ name: 'flags', dataType: 'bit', columnType: 'bit(9)' }),
    column({ name: 'id', dataType: 'int', columnType: 'int(11)' }),
    column({ name: 'note', dataType: 'text', columnType: 'text', charset: 'utf8mb4' }),
  ],
  primaryKey: ['region', 'code', 'flags', 'id'],
};

describe('keyset page bounds', () => {
  it('keeps a row key through JSON: text as text, binary and BIT as their bytes', () => {
    const row = {
      region: Buffer.from('eü'),
      code: Buffer.from([0xff, 0x00]),
      flags: Buffer.from([0x01, 0x02]),
      id: Buffer.from('42'),
      note: Buffer.from('not in the key'),
    };
    const bound = boundAfter(shape, row);
    expect(bound).toEqual(['eü', Buffer.from([0xff, 0x00]), Buffer.from([0x01, 0x02]), '42']);
    const json = JSON.parse(JSON.stringify(boundToJson(bound))) as unknown[];
    expect(json).toEqual(['eü', 'ff00', '0102', '42']);
    expect(boundFromJson(shape, json)).toEqual(bound);
  });

  it('reads a hex-looking text key back as text', () => {
    const row = {
      region: Buffer.from('ab'),
      code: Buffer.from('ab'),
      flags: Buffer.from([0]),
      id: Buffer.from('1'),
    };
    const back = boundFromJson(shape, boundToJson(boundAfter(shape, row)));
    expect(back[0]).toBe('ab');
    expect(back[1]).toEqual(Buffer.from('ab'));
  });
});
