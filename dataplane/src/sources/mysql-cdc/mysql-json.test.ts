import { describe, expect, it } from '@jest/globals';
import { EVENT, parseRowsHead, parseTableMap, TYPE } from './binlog-events.js';
import type { TableColumn } from './columns.js';
import { column } from './__tests__/table-column.js';
import { decodeMysqlJson, MysqlJsonError } from './mysql-json.js';
import { readRowImage } from './row-values.js';

// MySQL's binary JSON and the row events that carry it, tested against
// bytes recorded from MySQL servers by other projects (MariaDB, the live
// server of the other tests, stores JSON as text and cannot produce them):
//
// - single values: Vitess, go/mysql/binlog/binlog_json_test.go
//   (github.com/vitessio/vitess, Apache License 2.0), its bytes and the
//   values it expects;
// - whole table-map and rows events (bodies, after the 19-byte header):
//   go-mysql, replication/row_event_test.go and parser_test.go
//   (github.com/go-mysql-org/go-mysql, MIT License), recorded from MySQL
//   5.7/8.0 with the statements its comments give;
// - events of two MySQL 8 binary log files of rust_mysql_common,
//   test-data/binlogs/json-opaque.binlog (with the values its test expects)
//   and json.binlog.000001 (a table with JSON-generated columns, inserts,
//   an update and a partial JSON update) (github.com/blackbeam/rust_mysql_common,
//   MIT or Apache License 2.0).
//
// Where no recording was found (the large object/array forms, a partial
// update carrying a diff), the bytes are written here from the format of
// MySQL's sql/json_binary.h and said so.

const hex = (h: string) => Buffer.from(h.replace(/\s+/g, ''), 'hex');
const json = (bytes: number[]) => decodeMysqlJson(Buffer.from(bytes));

describe("MySQL's binary JSON (Vitess' recorded values)", () => {
  it('decodes objects, nested objects and arrays of the small form', () => {
    expect(json([0, 1, 0, 14, 0, 11, 0, 1, 0, 12, 12, 0, 97, 1, 98])).toEqual({ a: 'b' });
    expect(json([0, 1, 0, 12, 0, 11, 0, 1, 0, 5, 2, 0, 97])).toEqual({ a: 2 });
    expect(
      json([
        0, 1, 0, 29, 0, 11, 0, 4, 0, 0, 15, 0, 97, 115, 100, 102, 1, 0, 14, 0, 11, 0, 3, 0, 5, 123, 0, 102,
        111, 111,
      ]),
    ).toEqual({ asdf: { foo: 123 } });
    expect(json([2, 2, 0, 10, 0, 5, 1, 0, 5, 2, 0])).toEqual([1, 2]);
    expect(
      json([
        0, 4, 0, 60, 0, 32, 0, 1, 0, 33, 0, 1, 0, 34, 0, 2, 0, 36, 0, 2, 0, 12, 38, 0, 12, 40, 0, 12, 42, 0,
        2, 46, 0, 97, 99, 97, 98, 98, 99, 1, 98, 1, 100, 3, 97, 98, 99, 2, 0, 14, 0, 12, 10, 0, 12, 12, 0, 1,
        120, 1, 121,
      ]),
    ).toEqual({ a: 'b', c: 'd', ab: 'abc', bc: ['x', 'y'] });
    expect(
      json([
        2, 3, 0, 37, 0, 12, 13, 0, 2, 18, 0, 12, 33, 0, 4, 104, 101, 114, 101, 2, 0, 15, 0, 12, 10, 0, 12, 12,
        0, 1, 73, 2, 97, 109, 3, 33, 33, 33,
      ]),
    ).toEqual(['here', ['I', 'am'], '!!!']);
    expect(json([0, 0, 0, 4, 0])).toEqual({});
    expect(json([2, 0, 0, 4, 0])).toEqual([]);
  });

  it('decodes strings whose length takes one or two bytes', () => {
    const scalar = 'scalar string';
    expect(json([12, 13, ...Buffer.from(scalar)])).toBe(scalar);
    // 130 characters: the length 0x82 0x01 (7 bits a byte).
    expect(json([12, 130, 1, ...Buffer.from(scalar.repeat(10))])).toBe(scalar.repeat(10));
    const scopes = json([
      0,
      1,
      0,
      149,
      0,
      11,
      0,
      6,
      0,
      12,
      17,
      0,
      ...Buffer.from('scopes'),
      130,
      1,
      ...Buffer.from(
        'AAAAAAAAAAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAEAAAAAAEAAAAAA8AAABgAAAAAABAAAACAAAAAAAAA',
      ),
      84,
      216,
      142,
      184,
    ]);
    expect(scopes).toEqual({
      scopes:
        'AAAAAAAAAAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAABAAAAAAAAAAAAAAAAAEAAAAAAEAAAAAA8AAABgAAAAAABAAAACAAAAAAAAA',
    });
  });

  it('decodes literals, integers of each width and signedness, and doubles', () => {
    expect(json([4, 1])).toBe(true);
    expect(json([4, 2])).toBe(false);
    expect(json([4, 0])).toBeNull();
    expect(json([])).toBeNull();
    expect(json([5, 255, 255])).toBe(-1);
    expect(json([6, 1, 0])).toBe(1);
    expect(json([5, 255, 127])).toBe(32767);
    expect(json([7, 0, 128, 0, 0])).toBe(32768);
    expect(json([7, 255, 127, 255, 255])).toBe(-32769);
    expect(json([7, 255, 255, 255, 127])).toBe(2147483647);
    expect(json([8, 0, 128, 0, 0])).toBe(32768);
    expect(json([9, 0, 0, 0, 128, 0, 0, 0, 0])).toBe(2147483648);
    expect(json([7, 0, 0, 0, 128])).toBe(-2147483648);
    expect(json([9, 255, 255, 255, 127, 255, 255, 255, 255])).toBe(-2147483649);
    // Beyond 2^53 a JSON number is a double, as JSON.parse of the server's text (the snapshot's path) gives it.
    expect(json([10, 255, 255, 255, 255, 255, 255, 255, 255])).toBe(JSON.parse('18446744073709551615'));
    expect(json([9, 0, 0, 0, 0, 0, 0, 0, 128])).toBe(JSON.parse('-9223372036854775808'));
    expect(json([11, 110, 134, 27, 240, 249, 33, 9, 64])).toBe(3.14159);
  });

  it('decodes opaque DECIMAL as a number and the temporal types as the server prints them', () => {
    expect(json([15, 246, 8, 13, 4, 135, 91, 205, 21, 4, 210])).toBe(123456789.1234);
    expect(json([15, 246, 4, 3, 2, 0x81, 0x63])).toBe(1.99);
    expect(json([15, 246, 4, 2, 1, 0x80, 0x01])).toBe(0.1);
    expect(json([15, 246, 4, 2, 1, 0x7f, 0xfe])).toBe(-0.1);
    expect(json([15, 246, 7, 10, 9, 0x80, 0x00, 0x00, 0x00, 0x01])).toBe(0.000000001);
    expect(json([15, 246, 7, 10, 9, 0x7f, 0xff, 0xff, 0xff, 0xfe])).toBe(-0.000000001);
    expect(json([15, 12, 8, 0, 0, 0, 25, 118, 31, 149, 25])).toBe('2015-01-15 23:24:25.000000');
    expect(json([15, 11, 8, 0, 0, 0, 25, 118, 1, 0, 0])).toBe('23:24:25.000000');
    expect(json([15, 11, 8, 192, 212, 1, 25, 118, 1, 0, 0])).toBe('23:24:25.120000');
    expect(json([15, 10, 8, 0, 0, 0, 0, 0, 30, 149, 25])).toBe('2015-01-15');
  });

  it("gives other opaque values as the server's base64:type<N>: text", () => {
    expect(json([15, 16, 2, 202, 254])).toBe('base64:type16:yv4=');
    expect(json([15, 15, 2, 202, 254])).toBe('base64:type15:yv4=');
    expect(json([15, 252, 2, 202, 254])).toBe('base64:type252:yv4=');
  });

  it('refuses truncated values with a MysqlJsonError', () => {
    expect(() => json([15, 252, 2, 202])).toThrow(MysqlJsonError);
    expect(() => json([15, 10, 4, 0, 0, 0, 0])).toThrow(MysqlJsonError);
    expect(() => json([0, 1, 0, 14, 0, 11, 0, 1, 0, 12, 12, 0, 97])).toThrow(MysqlJsonError);
    expect(() => json([13])).toThrow(/type 13/);
  });
});

describe("MySQL's binary JSON, forms written here from json_binary.h", () => {
  it('decodes the large object and array forms (4-byte offsets, 32-bit integers inlined)', () => {
    // {"a": 1, "b": [true, 70000]}: a large object whose "b" is a large array.
    const bytes = hex(`
      01
      02000000 32000000
      1e000000 0100  1f000000 0100
      05 01000000  03 20000000
      61 62
      02000000 12000000
      04 01000000  07 70110100`);
    expect(decodeMysqlJson(bytes)).toEqual({ a: 1, b: [true, 70000] });
  });

  it('decodes a negative TIME and a DATETIME with microseconds', () => {
    // -838:59:59.000000 and 9999-12-31 23:59:59.999999, packed as my_time.h packs them.
    const packed = (v: bigint, field: number) => {
      const b = Buffer.alloc(11);
      b.writeUInt8(15, 0);
      b.writeUInt8(field, 1);
      b.writeUInt8(8, 2);
      b.writeBigInt64LE(v, 3);
      return decodeMysqlJson(b);
    };
    const hms = (h: bigint, m: bigint, s: bigint) => (h << 12n) | (m << 6n) | s;
    expect(packed(-(hms(838n, 59n, 59n) << 24n), 11)).toBe('-838:59:59.000000');
    const ymd = (((9999n * 13n + 12n) << 5n) | 31n) << 17n;
    expect(packed(((ymd | hms(23n, 59n, 59n)) << 24n) | 999999n, 12)).toBe('9999-12-31 23:59:59.999999');
  });

  it('keeps a key "__proto__" as a key', () => {
    const bytes = hex('00 0100 1400 0b00 0900 05 0100 5f5f70726f746f5f5f');
    const v = decodeMysqlJson(bytes) as Record<string, unknown>;
    expect(Object.keys(v)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(v)).toBe(Object.prototype);
  });
});

const col = (name: string, c: Partial<TableColumn> = {}) => column({ name, ...c });
const jsonCol = (name: string) => col(name, { dataType: 'json', columnType: 'json', json: true });

/** Every row image of a rows event, as the stream reads them. */
function rowsOf(type: number, mapHex: string, rowsHex: string, columns: TableColumn[]) {
  const map = parseTableMap(hex(mapHex));
  const head = parseRowsHead(type, hex(rowsHex));
  expect(head.tableId).toBe(map.tableId);
  const rows: Record<string, unknown>[] = [];
  while (head.reader.pos < head.reader.buf.length) {
    const first = readRowImage(head.reader, head.present, map.types, map.meta, columns);
    rows.push(first);
    if (head.kind === 'update') {
      rows.push(
        readRowImage(
          head.reader,
          head.presentAfter,
          map.types,
          map.meta,
          columns,
          head.partial ? first : undefined,
        ),
      );
    }
  }
  return rows;
}

describe("MySQL row events with JSON columns (go-mysql's recorded events)", () => {
  it('reads an insert of {"key1": "value1", "key2": "value2"} next to a DECIMAL(10,0)', () => {
    // CREATE TABLE t10 (c1 json, c2 decimal(10,0)); INSERT INTO t10 (c1, c2) VALUES ('{"key1": "value1", "key2": "value2"}', 1)
    const rows = rowsOf(
      EVENT.WRITE_ROWS_V2,
      '6d00000000000100047465737400037431300002f5f603040a0003',
      '6d00000000000100020002fffc29000000000200280012000400160004000c1a000c21006b6579316b6579320676616c7565310676616c7565328000000001',
      [jsonCol('c1'), col('c2', { dataType: 'decimal' })],
    );
    expect(rows).toEqual([{ c1: { key1: 'value1', key2: 'value2' }, c2: '1' }]);
  });

  it('reads an update of a generated JSON column from {} to {"a": 1234}', () => {
    // t11 (id int, cfg varchar(100), cfg_json json AS (cfg) VIRTUAL, age int): update t11 set cfg = '{"a":1234}' where id = 1
    const rows = rowsOf(
      EVENT.UPDATE_ROWS_V2,
      '6c00000000000100047465737400037431310004030ff503036400040f',
      '6c00000000000100020004fffff801000000027b7d050000000000000400f8010000000a7b2261223a313233347d0d0000000001000c000b00010005d20461',
      [col('id'), col('cfg', { dataType: 'varchar', charset: 'utf8mb3' }), jsonCol('cfg_json'), col('age')],
    );
    expect(rows).toEqual([
      { id: 1, cfg: '{}', cfg_json: {}, age: null },
      { id: 1, cfg: '{"a":1234}', cfg_json: { a: 1234 }, age: null },
    ]);
  });

  it('reads the empty JSON of a NOT NULL column inserted without a value as JSON null', () => {
    // insert into hj_order_preview (id, buyer_id, order_sn, is_del, add_time, last_update_time)
    //   values (1, 95891865464386, 13376222192996417, 0, 1479983995, 1479983995)
    const rows = rowsOf(
      EVENT.WRITE_ROWS_V2,
      '720000000000010004746573740010686a5f6f726465725f707265766965770007030808f501031102040000',
      '7200000000000100020007ff800100000042ee9390365700004110406c9a852f0000000000007bc3365800000000',
      [
        col('id'),
        col('buyer_id', { dataType: 'bigint' }),
        col('order_sn', { dataType: 'bigint' }),
        jsonCol('order_detail'),
        col('is_del', { dataType: 'tinyint' }),
        col('add_time'),
        col('last_update_time', { dataType: 'timestamp' }),
      ],
    );
    expect(rows[0]).toMatchObject({
      id: 1,
      buyer_id: 95891865464386,
      order_sn: '13376222192996417',
      order_detail: null,
      is_del: 0,
      add_time: 1479983995,
    });
  });
});

describe("MySQL's partial JSON updates (binlog_row_value_options=PARTIAL_JSON)", () => {
  const types = [3, 3, TYPE.JSON, TYPE.JSON, TYPE.JSON, TYPE.DATETIME2, TYPE.DATETIME2, 3];
  const columns = ['a', 'b', 'j1', 'j2', 'j3', 'd1', 'd2', 'c'].map((n, i) =>
    types[i] === TYPE.JSON ? jsonCol(n) : col(n, { dataType: i === 5 || i === 6 ? 'datetime' : 'int' }),
  );
  const meta = types.map((t) => ({
    realType: t,
    length: t === TYPE.JSON ? 4 : 0,
    precision: 0,
    decimals: 0,
    bits: 0,
  }));
  const before = { j1: { x: 1 }, j2: [1, 2], j3: 'same' };
  const afterImage = (h: string) => {
    const head = parseRowsHead(EVENT.MYSQL_PARTIAL_UPDATE_ROWS, hex(`010000000000 0000 0200 08 ff ff ${h}`));
    expect(head).toMatchObject({ kind: 'update', partial: true });
    return readRowImage(head.reader, head.presentAfter, types, meta, columns, before);
  };

  it("reads go-mysql's recorded after image whose three JSON columns carry no diff as their before values", () => {
    // go-mysql parser_test.go TestRowsEventDecodeImageWithEmptyJSON: value options 1 (partial JSON), all three diffed, no operation each.
    const row = afterImage('010700f62b0f00ebaf500200000000000000000000000099acfabec399afab311834110000');
    expect(row).toMatchObject({ a: 994294, b: 38842347, j1: { x: 1 }, j2: [1, 2], j3: 'same', c: 4404 });
  });

  it('refuses a diff that does not fit the value before it, saying which setting to change', () => {
    // Written here: value options 1, the second JSON column ([1, 2] before) diffed with a REPLACE of $.x by 2.
    const diff = '00 03 242e78 03 050200';
    const image = `01 02 00 01000000 02000000 00000000 09000000 ${diff} 00000000 ${'8000000000'.repeat(2)} 03000000`;
    expect(() => afterImage(image.replace(/ /g, ''))).toThrow(
      /JSON column j2 as a partial diff \(binlog_row_value_options=PARTIAL_JSON\) that cannot be applied: .*\$\.x.*SET PERSIST binlog_row_value_options = ''/,
    );
  });
});

describe('MySQL 8 binary logs recorded by rust_mysql_common', () => {
  it('reads the opaque values of json-opaque.binlog as its test expects them (numbers as numbers)', () => {
    const map = '5a0000000000010003666f6f0004746573740001f5010401040201610c0180';
    const events = [
      ['5a00000000000100020001ff00100000000001000f000b0001000f0c00610f0155', { a: 'base64:type15:VQ==' }],
      [
        '5a00000000000100020001ff001700000000010016000b0001000f0c00620a080000000000e48b19',
        { b: '2012-03-18' },
      ],
      [
        '5a00000000000100020001ff001700000000010016000b0001000f0c00630c08000000adb7e48b19',
        { c: '2012-03-18 11:30:45.000000' },
      ],
      [
        '5a00000000000100020001ff001700000000010016000b0001000f0c00630b08f1fb09ee77050000',
        { c: '87:31:46.654321' },
      ],
      ['5a00000000000100020001ff001500000000010014000b0001000f0c0064f6060603807b01c8', { d: 123.456 }],
      ['5a00000000000100020001ff001600000000010015000b0001000f0c0065f6070b028000000900', { e: 9 }],
      [
        '5a00000000000100020001ff001d0000000001001c000b000100020c006504001000050000050100040100040200',
        { e: [0, 1, true, false] },
      ],
      ['5a00000000000100020001ff000d0000000001000c000b00010004000065', { e: null }],
    ] as const;
    for (const [rows, expected] of events) {
      expect(rowsOf(EVENT.WRITE_ROWS_V2, map, rows, [jsonCol('a')])).toEqual([{ a: expected }]);
    }
  });

  // CREATE TABLE t (id INT PRIMARY KEY AUTO_INCREMENT, json_col JSON,
  //   name VARCHAR(100) AS (json_col->>'$.name'), age INT AS (json_col->'$.age'))
  const map = '7700000000000100056d7973716c000174000403f50f03030490010e0101000203fcff00';
  const columns = [
    col('id'),
    jsonCol('json_col'),
    col('name', { dataType: 'varchar', charset: 'utf8mb4' }),
    col('age'),
  ];

  it('reads an insert into a table with generated columns (json.binlog.000001)', () => {
    const insert =
      '7700000000000100020004ff0001000000340000000003003300190003001c000400200004000518000c24000c2f00616765646174616e616d650a78787878787878787878034a6f6503004a6f6518000000';
    expect(rowsOf(EVENT.WRITE_ROWS_V2, map, insert, columns)).toEqual([
      { id: 1, json_col: { age: 24, data: 'xxxxxxxxxx', name: 'Joe' }, name: 'Joe', age: 24 },
    ]);
  });

  // A PARTIAL_UPDATE_ROWS_EVENT of six rows, each a REPLACE of $.age (JSON_SET(json_col, '$.age', age + 1)).
  const partial =
    '7700000000000100020004010e00010000000101000b0000000005242e61676503051a0003004a6f651a00000000020000000101000b0000000005242e6167650305220003005375652200000000030000000101000b0000000005242e61676503052a000400506574652a00000000040000000101000b0000000005242e61676503051a0003004a6f651a00000000050000000101000b0000000005242e6167650305220003005375652200000000060000000101000b0000000005242e61676503052a000400506574652a000000';

  it('applies the recorded partial JSON update to the value before it, as the generated age column confirms', () => {
    const m = parseTableMap(hex(map));
    const head = parseRowsHead(EVENT.MYSQL_PARTIAL_UPDATE_ROWS, hex(partial));
    // Before this event the recording's previous update left ages 25, 33, 41 for Joe, Sue, Pete (rows 1-3, again 4-6).
    const people = [
      ['Joe', 25, 'x'],
      ['Sue', 33, 'y'],
      ['Pete', 41, 'z'],
    ] as const;
    const afters: Record<string, unknown>[] = [];
    for (let i = 0; head.reader.pos < head.reader.buf.length; i++) {
      const key = readRowImage(head.reader, head.present, m.types, m.meta, columns);
      const [name, age, letter] = people[i % 3]!;
      // The recording's before image holds the key only (binlog_row_image=MINIMAL there; Sluice requires FULL):
      // the rest of a full before image is added as the recording left it.
      const before = { ...key, json_col: { age, data: letter.repeat(10), name }, name, age };
      afters.push(readRowImage(head.reader, head.presentAfter, m.types, m.meta, columns, before));
    }
    expect(afters).toEqual(
      [1, 2, 3, 4, 5, 6].map((id) => {
        const [name, age, letter] = people[(id - 1) % 3]!;
        return { json_col: { age: age + 1, data: letter.repeat(10), name }, name, age: age + 1 };
      }),
    );
  });

  it('refuses the recorded partial update when the before image lacks the JSON column (binlog_row_image not FULL)', () => {
    expect(() => rowsOf(EVENT.MYSQL_PARTIAL_UPDATE_ROWS, map, partial, columns)).toThrow(
      /json_col .*cannot be applied: the before image does not hold the column \(binlog_row_image is not FULL\)/,
    );
  });

  it('refuses a rows event read as images of no column, rather than reading them forever', () => {
    // The insert above with its column bitmap cleared.
    const cleared = hex(
      '7700000000000100020004000001000000340000000003003300190003001c000400200004000518000c24000c2f00616765646174616e616d650a78787878787878787878034a6f6503004a6f6518000000',
    );
    const m = parseTableMap(hex(map));
    const head = parseRowsHead(EVENT.WRITE_ROWS_V2, cleared);
    expect(() => readRowImage(head.reader, head.present, m.types, m.meta, columns)).toThrow(/no column/);
  });
});
