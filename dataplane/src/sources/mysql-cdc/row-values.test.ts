import { describe, expect, it } from '@jest/globals';
import { parseTableMap, Reader, TYPE, type ColumnMeta } from './binlog-events.js';
import type { TableColumn } from './columns.js';
import { column } from './__tests__/table-column.js';
import { binlogValue, float32 } from './row-values.js';
import { wkbToWkt } from './wkt.js';

// Decoding of binary log values from bytes, where the live MariaDB server
// of the integration tests cannot produce them or a byte example is
// documented: DECIMAL (MySQL's "Precision Math" example), TIME2 fractions of
// negative values, FLOAT's shortest form, WKB multi-points, and the
// optional metadata of a MySQL 8 table map (column names).

const meta = (m: Partial<ColumnMeta>): ColumnMeta => ({
  realType: 0,
  length: 0,
  precision: 0,
  decimals: 0,
  bits: 0,
  ...m,
});
const value = (type: number, m: Partial<ColumnMeta>, hex: string, c: Partial<TableColumn> = {}) =>
  binlogValue(type, meta(m), column(c), new Reader(Buffer.from(hex.replace(/ /g, ''), 'hex')));

describe('binary log values', () => {
  it('reads DECIMAL exactly, as the documentation stores 1234567890.1234 and its negative in DECIMAL(14,4)', () => {
    expect(value(TYPE.NEWDECIMAL, { precision: 14, decimals: 4 }, '81 0D FB 38 D2 04 D2')).toBe(
      '1234567890.1234',
    );
    expect(value(TYPE.NEWDECIMAL, { precision: 14, decimals: 4 }, '7E F2 04 C7 2D FB 2D')).toBe(
      '-1234567890.1234',
    );
    // DECIMAL(5,2) 0.50 and -0.50: no integer digits stored but a zero.
    expect(value(TYPE.NEWDECIMAL, { precision: 5, decimals: 2 }, '80 00 32')).toBe('0.50');
    expect(value(TYPE.NEWDECIMAL, { precision: 5, decimals: 2 }, '7F FF CD')).toBe('-0.50');
  });

  it('reads negative TIME(2) and TIME(4) with fractions (stored complemented, the fraction unsigned)', () => {
    // -00:00:01.25 in TIME(2): intpart -2 (one second up, the fraction 1 - 0.25 complemented), frac 0x100 - 25.
    expect(value(TYPE.TIME2, { decimals: 2 }, '7F FF FE E7')).toBe('-00:00:01.25');
    expect(value(TYPE.TIME2, { decimals: 2 }, '80 10 00 32')).toBe('01:00:00.50');
    expect(value(TYPE.TIME2, { decimals: 4 }, '7F FF FE F6 3C')).toBe('-00:00:01.2500');
  });

  it('gives FLOAT as the shortest decimal of its float32', () => {
    expect(float32(Math.fround(0.1))).toBe(0.1);
    expect(float32(Math.fround(3.4028234663852886e38))).toBe(3.4028235e38);
    expect(value(TYPE.FLOAT, {}, Buffer.from(new Float32Array([1.1]).buffer).toString('hex'))).toBe(1.1);
  });

  it('reads BIGINT UNSIGNED beyond 2^53 as a decimal string, and a signed one as negative', () => {
    expect(value(TYPE.LONGLONG, {}, 'FF FF FF FF FF FF FF FF', { unsigned: true })).toBe(
      '18446744073709551615',
    );
    expect(value(TYPE.LONGLONG, {}, 'FF FF FF FF FF FF FF FF')).toBe(-1);
    expect(value(TYPE.INT24, {}, 'FF FF 7F')).toBe(8388607);
    expect(value(TYPE.INT24, {}, '00 00 80')).toBe(-8388608);
  });

  it('writes WKB points and multi-points as WKT, with the SRID when it is not 0', () => {
    const wkb = (srid: number, body: string) =>
      Buffer.concat([
        Buffer.from([srid & 0xff, (srid >> 8) & 0xff, 0, 0]),
        Buffer.from(body.replace(/ /g, ''), 'hex'),
      ]);
    const point = (x: number, y: number) => {
      const b = Buffer.alloc(21);
      b.writeUInt8(1, 0);
      b.writeUInt32LE(1, 1);
      b.writeDoubleLE(x, 5);
      b.writeDoubleLE(y, 13);
      return b.toString('hex');
    };
    expect(wkbToWkt(wkb(4326, point(1.5, -2)))).toBe('SRID=4326;POINT(1.5 -2)');
    expect(wkbToWkt(wkb(0, `01 04000000 02000000 ${point(0, 0)} ${point(1, 1)}`))).toBe(
      'MULTIPOINT((0 0),(1 1))',
    );
  });
});

describe('table maps', () => {
  it('reads the column names of the optional metadata (binlog_row_metadata=FULL)', () => {
    const parts = [
      '2a0000000000', // table id
      '0100', // flags
      '02',
      Buffer.from('db').toString('hex'),
      '00',
      '01',
      Buffer.from('t').toString('hex'),
      '00',
      '02', // columns
      '030f', // LONG, VARCHAR
      '02',
      '2800', // metadata: VARCHAR(40) as two bytes of length
      '02', // null bitmap: the second column nullable
      '01',
      '01',
      '01', // SIGNEDNESS: one byte
      '04',
      '06',
      '02',
      Buffer.from('id').toString('hex'),
      '02',
      Buffer.from('nm').toString('hex'),
    ];
    const map = parseTableMap(Buffer.from(parts.join(''), 'hex'));
    expect(map).toMatchObject({ tableId: 42, schema: 'db', table: 't', types: [3, 15], names: ['id', 'nm'] });
    expect(map.meta[1]?.length).toBe(40);
  });
});
