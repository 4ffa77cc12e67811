import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type mysql from 'mysql2/promise';
import { mariadbConnection } from './mariadb-numbered.js';
import { inProcessCapture } from './mariadb-in-process.js';

// The types table of docs/data-plane-mysql.md, held against the real MariaDB
// server: rows of every column type are read by the snapshot (text
// protocol), then copied on the server to new rows that the binary log
// carries, updated and deleted. Each event's values must be the table's, the
// same from both paths (a target cannot tell a snapshot row from a streamed one).

const COLUMNS = `
  ti tinyint, tiu tinyint unsigned, si smallint, siu smallint unsigned,
  mi mediumint, miu mediumint unsigned, i int, iu int unsigned, bi bigint, biu bigint unsigned,
  dec1 decimal(65,30), dec2 decimal(10,0), f float, d double,
  dt date, t0 time, t6 time(6), t2 time(2), dtm datetime, dtm3 datetime(3), dtm6 datetime(6),
  ts timestamp(6) null default null, y year,
  c char(5), vc varchar(300) character set utf8mb4, vl varchar(20) character set latin1,
  tx text character set utf8mb4, lt longtext,
  bn binary(4), vb varbinary(20), bl blob, b1 bit(1), b64 bit(64),
  e enum('a','b c','d''e'), st set('x','y','z'), j json, g geometry, p point`;

/** SQL values of row 1 (low ends), row 2 (high ends); row 3 is NULL throughout. */
const LOW = `-128, 0, -32768, 0, -8388608, 0, -2147483648, 0, -9223372036854775808, 0,
  -12345678901234567890123456789012345.123456789012345678901234567890, -9999999999, 0.1, -1.7976931348623157e308,
  '1000-01-01', '-838:59:59', '-12:34:56.000001', '-01:00:00.25', '1000-01-01 00:00:00', '2024-02-29 23:59:59.999',
  '9999-12-31 23:59:59.999999', '1970-01-01 00:00:01', 1901,
  'ab', 'é€🙂 "q" \\\\ \\n', 'café', '', 'x',
  x'01', x'', x'00ff00', b'0', b'1111111111111111111111111111111111111111111111111111111111111111',
  'd''e', '', '[]', ST_GeomFromText('POINT(0 0)'), ST_GeomFromText('POINT(1.5 -2.25)', 4326)`;
const HIGH = `127, 255, 32767, 65535, 8388607, 16777215, 2147483647, 4294967295, 9223372036854775807, 18446744073709551615,
  0.000000000000000000000000000001, 0, 3.14, 0.1,
  '9999-12-31', '838:59:59', '838:59:58.999999', '00:00:00.50', '9999-12-31 23:59:59', '2000-01-01 00:00:00.001',
  '2000-01-01 00:00:00', '2038-01-19 03:14:07.999999', 2155,
  'abcde', REPEAT('x', 300), 'ÀÿÆ', 'multi\\nline', REPEAT('long ', 20000),
  x'01020304', REPEAT(x'ff', 20), REPEAT(x'0a', 1000), b'1', b'1',
  'b c', 'z,x', '{"a":{"b":[1,2.5,"s",null,true]}}',
  ST_GeomFromText('GEOMETRYCOLLECTION(POINT(1 2),LINESTRING(0 0,1 1),POLYGON((0 0,4 0,4 4,0 0),(1 1,2 1,2 2,1 1)))'),
  ST_GeomFromText('POINT(-0.5 1e-7)')`;

const EXPECTED_LOW = {
  ti: -128,
  tiu: 0,
  si: -32768,
  siu: 0,
  mi: -8388608,
  miu: 0,
  i: -2147483648,
  iu: 0,
  bi: '-9223372036854775808',
  biu: 0,
  dec1: '-12345678901234567890123456789012345.123456789012345678901234567890',
  dec2: '-9999999999',
  f: 0.1,
  d: -1.7976931348623157e308,
  dt: '1000-01-01',
  t0: '-838:59:59',
  t6: '-12:34:56.000001',
  t2: '-01:00:00.25',
  dtm: '1000-01-01 00:00:00',
  dtm3: '2024-02-29 23:59:59.999',
  dtm6: '9999-12-31 23:59:59.999999',
  ts: '1970-01-01T00:00:01.000000Z',
  y: 1901,
  c: 'ab',
  vc: 'é€🙂 "q" \\ \n',
  vl: 'café',
  tx: '',
  lt: 'x',
  bn: 'AQAAAA==',
  vb: '',
  bl: 'AP8A',
  b1: false,
  b64: '18446744073709551615',
  e: "d'e",
  st: '',
  j: [],
  g: 'POINT(0 0)',
  p: 'SRID=4326;POINT(1.5 -2.25)',
};
const EXPECTED_HIGH = {
  ti: 127,
  tiu: 255,
  si: 32767,
  siu: 65535,
  mi: 8388607,
  miu: 16777215,
  i: 2147483647,
  iu: 4294967295,
  bi: '9223372036854775807',
  biu: '18446744073709551615',
  dec1: '0.000000000000000000000000000001',
  dec2: '0',
  f: 3.14,
  d: 0.1,
  dt: '9999-12-31',
  t0: '838:59:59',
  t6: '838:59:58.999999',
  t2: '00:00:00.50',
  dtm: '9999-12-31 23:59:59',
  dtm3: '2000-01-01 00:00:00.001',
  dtm6: '2000-01-01 00:00:00.000000',
  ts: '2038-01-19T03:14:07.999999Z',
  y: 2155,
  c: 'abcde',
  vc: 'x'.repeat(300),
  vl: 'ÀÿÆ',
  tx: 'multi\nline',
  lt: 'long '.repeat(20000),
  bn: 'AQIDBA==',
  vb: Buffer.alloc(20, 0xff).toString('base64'),
  bl: Buffer.alloc(1000, 0x0a).toString('base64'),
  b1: true,
  b64: 1,
  e: 'b c',
  st: 'x,z',
  j: { a: { b: [1, 2.5, 's', null, true] } },
  g: 'GEOMETRYCOLLECTION(POINT(1 2),LINESTRING(0 0,1 1),POLYGON((0 0,4 0,4 4,0 0),(1 1,2 1,2 2,1 1)))',
  p: 'POINT(-0.5 1e-7)',
};
const NAMES = Object.keys(EXPECTED_LOW);
const EXPECTED_NULL = Object.fromEntries(NAMES.map((n) => [n, null]));

describe('MariaDB source: every column type, from the snapshot and from the binary log alike', () => {
  const database = `cdc_types_${randomUUID().slice(0, 8)}`;
  let conn: mysql.Connection;
  const run = inProcessCapture(database, 'typed');
  const events = run.events;
  let abort: AbortController | undefined;
  let done: Promise<void> | undefined;

  beforeAll(async () => {
    conn = await mariadbConnection();
    await conn.query(`create database \`${database}\``);
    await conn.query(`use \`${database}\``);
    // TIMESTAMP literals are read in the session's zone: UTC, as the expectations are written.
    await conn.query("set time_zone = '+00:00'");
    await conn.query(`create table typed (id int primary key, ${COLUMNS})`);
    await conn.query(`insert into typed values (1, ${LOW}), (2, ${HIGH})`);
    await conn.query('insert into typed (id) values (3)');
  });
  afterAll(async () => {
    abort?.abort();
    await done?.catch(() => undefined);
    await conn.query(`drop database if exists \`${database}\``).catch(() => undefined);
    await conn.end();
  });

  const until = async (test: () => boolean, what: string) => {
    const deadline = Date.now() + 30_000;
    while (!test()) {
      if (Date.now() > deadline) throw new Error(`no ${what} after 30 s: ${events.length} events`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const row = (id: number, op: string) => events.find((e) => e.op === op && (e.after ?? e.before)?.id === id);
  const values = (r: Record<string, unknown> | null | undefined) => {
    const { id: _id, ...rest } = r ?? {};
    return rest;
  };

  it('maps each type as the table says, the snapshot and the stream giving the same values', async () => {
    const capture = await run.start();
    abort = capture.abort;
    done = capture.done;
    await until(() => run.position() !== null, 'snapshot');
    expect(events.map((e) => [e.op, e.after?.id, e.source.snapshot])).toEqual([
      ['r', 1, true],
      ['r', 2, true],
      ['r', 3, true],
    ]);
    expect(values(row(1, 'r')?.after)).toEqual(EXPECTED_LOW);
    expect(values(row(2, 'r')?.after)).toEqual(EXPECTED_HIGH);
    expect(values(row(3, 'r')?.after)).toEqual(EXPECTED_NULL);

    // The same stored values again, through the binary log.
    await conn.query('insert into typed select id + 10, ' + NAMES.join(', ') + ' from typed');
    await conn.query('update typed set i = 7 where id = 12');
    await conn.query('delete from typed where id = 11');
    await until(() => row(11, 'd') !== undefined, 'delete event');
    expect(values(row(11, 'c')?.after)).toEqual(EXPECTED_LOW);
    expect(values(row(12, 'c')?.after)).toEqual(EXPECTED_HIGH);
    expect(values(row(13, 'c')?.after)).toEqual(EXPECTED_NULL);
    const update = row(12, 'u');
    expect(values(update?.before)).toEqual(EXPECTED_HIGH);
    expect(values(update?.after)).toEqual({ ...EXPECTED_HIGH, i: 7 });
    expect(update?.key).toEqual({ id: 12 });
    expect(values(row(11, 'd')?.before)).toEqual(EXPECTED_LOW);
    expect(row(11, 'd')?.after).toBeNull();
    // Each streamed event names its transaction's GTID.
    expect(update?.source.position).toMatch(/^\d+-\d+-\d+$/);
  });
});
