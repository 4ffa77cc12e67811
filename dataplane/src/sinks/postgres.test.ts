import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createScratchDatabase, describeWithPostgres, type ScratchDatabase } from '@sluice/testing/postgres';
import type { Sink } from '../contracts.js';
import { createPostgresSink, planBatch } from './postgres.js';
import { ddlFor, typeConflicts } from './postgres-ddl.js';
import { del, truncate, upsert } from '../../test/sink-records.js';

const signal = () => new AbortController().signal;

describe('ddlFor (what the preview shows)', () => {
  const orders = { schema: 'public', table: 'orders' };

  it('creates a table typed from the casts, the values otherwise, with the key as primary key', () => {
    const rows = [{ id: 1, amount: 1.5, paid: true, at: '2024-01-02T03:04:05Z', tags: ['a'], note: null }];
    expect(ddlFor(orders, null, rows, ['id'], { at: 'datetime' })).toEqual([
      'CREATE TABLE IF NOT EXISTS "public"."orders" ("id" bigint, "amount" double precision, "paid" boolean, ' +
        '"at" timestamp with time zone, "tags" jsonb, "note" text, PRIMARY KEY ("id"))',
    ]);
  });

  it('adds only the missing columns to an existing table, and nothing when none is missing', () => {
    const existing = new Map([
      ['id', 'bigint'],
      ['name', 'text'],
    ]);
    expect(
      ddlFor(orders, existing, [{ id: 1, name: 'a', day: '2024-01-02' }], ['id'], { day: 'date' }),
    ).toEqual(['ALTER TABLE "public"."orders" ADD COLUMN IF NOT EXISTS "day" date']);
    expect(ddlFor(orders, existing, [{ id: 1, name: 'a' }], ['id'])).toEqual([]);
  });

  it('quotes names that are user data', () => {
    const [sql] = ddlFor({ schema: 'Sales', table: 'we"ird' }, null, [{ 'Key"': 'x' }], ['Key"']);
    expect(sql).toBe('CREATE TABLE IF NOT EXISTS "Sales"."we""ird" ("Key""" text, PRIMARY KEY ("Key"""))');
  });
});

describe('typeConflicts (what the preview warns of)', () => {
  const table = new Map([
    ['id', 'integer'],
    ['amount', 'numeric(10,2)'],
    ['paid', 'boolean'],
    ['note', 'character varying(20)'],
    ['at', 'timestamp with time zone'],
    ['tags', 'text[]'],
  ]);

  it('reports values a number, boolean or date column would refuse, by cast or by value', () => {
    const rows = [{ id: 1, amount: 'lots', paid: 1, note: { a: 1 }, at: '2024-01-02', tags: 'x' }];
    expect(typeConflicts(table, rows, ['id'], { at: 'date' })).toEqual([
      { column: 'amount', table_type: 'numeric(10,2)', mapper_type: 'text' },
      { column: 'paid', table_type: 'boolean', mapper_type: 'bigint' },
    ]);
  });

  it('accepts matching kinds, text columns, unknown types, all-null columns and new columns', () => {
    const rows = [{ id: 2, amount: 3.5, paid: true, note: 7, at: null, tags: 'x', extra: 'new' }];
    expect(typeConflicts(table, rows, ['id'])).toEqual([]);
    expect(typeConflicts(table, [{ id: 3, at: 'soon' }], ['id'], { at: 'string' })).toEqual([
      { column: 'at', table_type: 'timestamp with time zone', mapper_type: 'text' },
    ]);
  });
});

describe('planBatch', () => {
  it('folds repeated keys: last values win, a delete then insert deletes first', () => {
    const plan = planBatch([
      upsert('t', { id: 1, a: 'x', b: 'y' }),
      upsert('t', { id: 1, a: 'z' }),
      upsert('t', { id: 2, a: 'old' }),
      del('t', { id: 2 }),
      upsert('t', { id: 2, a: 'new' }),
      del('t', { id: 3 }),
    ]).get('t');
    expect(plan?.upserts).toEqual([
      { id: 1, a: 'z', b: 'y' },
      { id: 2, a: 'new' },
    ]);
    expect(plan?.deletes).toEqual([{ id: 2 }, { id: 3 }]);
    // Rows of other columns go to statements of their own: a missing column is left as it is.
    expect(plan?.upsertGroups).toEqual([[{ id: 1, a: 'z', b: 'y' }], [{ id: 2, a: 'new' }]]);
  });

  it('a truncate forgets the rows of its table before it and empties the table first', () => {
    const plans = planBatch([
      upsert('t', { id: 1, a: 'gone' }),
      del('t', { id: 2 }),
      upsert('other', { id: 1 }),
      truncate('t', []),
      upsert('t', { id: 3, a: 'kept' }),
      del('t', { id: 4 }),
    ]);
    expect(plans.get('t')).toMatchObject({
      truncate: true,
      keyColumns: ['id'],
      upserts: [{ id: 3, a: 'kept' }],
      deletes: [{ id: 4 }],
    });
    expect(plans.get('other')).toMatchObject({ truncate: false, upserts: [{ id: 1 }] });
    // A truncate alone needs no key columns.
    expect(planBatch([truncate('t', [])]).get('t')).toMatchObject({
      truncate: true,
      upserts: [],
      deletes: [],
    });
  });
});

describeWithPostgres('Postgres target sink on a real server', () => {
  let db: ScratchDatabase;
  let sink: Sink;

  beforeAll(async () => {
    db = await createScratchDatabase('sluice_test_pgsink');
    sink = createPostgresSink(db.settings, {
      castsFor: (t) => (t === 'typed' ? { at: 'datetime', day: 'date' } : undefined),
    });
  });
  afterAll(async () => {
    await sink?.close();
    await db?.drop();
  });

  const rows = async (sql: string) => (await db.client.query(sql)).rows;

  it('creates the table with a primary key, and typed columns from the casts', async () => {
    await sink.write(
      [upsert('typed', { id: 1, at: '2024-01-02T03:04:05+02:00', day: '2024-01-02', n: 7 })],
      signal(),
    );
    const cols = await rows(
      `select column_name, data_type from information_schema.columns where table_name = 'typed' order by ordinal_position`,
    );
    expect(cols).toEqual([
      { column_name: 'id', data_type: 'bigint' },
      { column_name: 'at', data_type: 'timestamp with time zone' },
      { column_name: 'day', data_type: 'date' },
      { column_name: 'n', data_type: 'bigint' },
    ]);
    const pk = await rows(
      `select a.attname from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
        where i.indrelid = 'typed'::regclass and i.indisprimary`,
    );
    expect(pk).toEqual([{ attname: 'id' }]);
    expect(await rows(`select id::int, at = '2024-01-02T01:04:05Z' as utc from typed`)).toEqual([
      { id: 1, utc: true },
    ]);
  });

  it('writing the same batch twice leaves the table as writing it once', async () => {
    const batch = [upsert('orders', { id: 1, name: 'ada' }), upsert('orders', { id: 2, name: 'bob' })];
    await sink.write(batch, signal());
    await sink.write(batch, signal());
    expect(await rows('select id::int, name from orders order by id')).toEqual([
      { id: 1, name: 'ada' },
      { id: 2, name: 'bob' },
    ]);
  });

  it('updates by key and deletes by key', async () => {
    await sink.write([upsert('orders', { id: 1, name: 'ada lovelace' }), del('orders', { id: 2 })], signal());
    expect(await rows('select id::int, name from orders order by id')).toEqual([
      { id: 1, name: 'ada lovelace' },
    ]);
  });

  it('adds a new column and keeps the old rows', async () => {
    await sink.write([upsert('orders', { id: 3, name: 'cy', total: 9.5 })], signal());
    expect(await rows('select id::int, name, total from orders order by id')).toEqual([
      { id: 1, name: 'ada lovelace', total: null },
      { id: 3, name: 'cy', total: 9.5 },
    ]);
  });

  it('takes table and column names with quotes, spaces and upper case', async () => {
    const table = 'Odd "Table"';
    await sink.write(
      [
        upsert(table, { 'Key"': 'k1', 'Some Value': 1 }, ['Key"']),
        upsert(table, { 'Key"': 'k1', 'Some Value': 2 }, ['Key"']),
      ],
      signal(),
    );
    expect(await rows(`select "Key""", "Some Value"::int as v from "Odd ""Table"""`)).toEqual([
      { 'Key"': 'k1', v: 2 },
    ]);
  });

  it('keys of several columns', async () => {
    await sink.write(
      [
        upsert('lines', { order: 1, line: 1, qty: 2 }, ['order', 'line']),
        upsert('lines', { order: 1, line: 2, qty: 3 }, ['order', 'line']),
      ],
      signal(),
    );
    await sink.write([del('lines', { order: 1, line: 1 }, ['order', 'line'])], signal());
    expect(await rows('select "order"::int, line::int, qty::int from lines')).toEqual([
      { order: 1, line: 2, qty: 3 },
    ]);
  });

  it('a batch the target refuses leaves nothing half-written and says why without the SQL', async () => {
    // `total` is double precision since the earlier batch: text cannot go there.
    const failing = sink.write(
      [
        upsert('orders', { id: 10, name: 'first' }),
        upsert('fresh_table', { id: 1, x: 'new table' }),
        upsert('orders', { id: 11, name: 'bad', total: 'not a number' }),
      ],
      signal(),
    );
    await expect(failing).rejects.toThrow(
      /^Writing to "public"\."orders" failed: PostgreSQL at [^:]+:\d+: invalid input syntax for type double precision/,
    );
    await expect(failing).rejects.not.toThrow(/insert|unnest|select/i);
    expect(await rows('select id::int from orders where id >= 10')).toEqual([]);
    expect(await rows(`select to_regclass('fresh_table') is null as gone`)).toEqual([{ gone: true }]);
    // The sink still works after the failure.
    await sink.write([upsert('orders', { id: 12, name: 'after' })], signal());
    expect(await rows('select name from orders where id = 12')).toEqual([{ name: 'after' }]);
  });

  it('a one-statement batch on a known table (sent without BEGIN) is all or nothing too', async () => {
    const failing = sink.write(
      [
        upsert('orders', { id: 20, name: 'good', total: 1 }),
        upsert('orders', { id: 21, name: 'bad', total: 'not a number' }),
      ],
      signal(),
    );
    await expect(failing).rejects.toThrow(
      /^Writing to "public"\."orders" failed: PostgreSQL at [^:]+:\d+: invalid input syntax/,
    );
    expect(await rows('select id::int from orders where id in (20, 21)')).toEqual([]);
    await sink.write([upsert('orders', { id: 22, name: 'next', total: 2 })], signal());
    expect(await rows('select name, total from orders where id = 22')).toEqual([{ name: 'next', total: 2 }]);
  });

  it('a truncate in a batch removes every row written before it and keeps those after, in one transaction', async () => {
    await sink.write([upsert('mirror', { id: 1, v: 'a' }), upsert('mirror', { id: 2, v: 'b' })], signal());
    await db.client.query(`insert into mirror values (99, 'written by someone else')`);
    await sink.write(
      [
        upsert('mirror', { id: 3, v: 'c' }),
        truncate('mirror'),
        upsert('mirror', { id: 4, v: 'd' }),
        truncate('mirror'),
        upsert('mirror', { id: 5, v: 'e' }),
      ],
      signal(),
    );
    expect(await rows('select id::int, v from mirror order by id')).toEqual([{ id: 5, v: 'e' }]);
    // A truncate alone, of a table known to the sink and of one that does not exist.
    await sink.write([truncate('mirror'), truncate('never_created')], signal());
    expect(await rows('select count(*)::int as n from mirror')).toEqual([{ n: 0 }]);
    expect(await rows(`select to_regclass('never_created') is null as absent`)).toEqual([{ absent: true }]);
    // A failing batch leaves the rows its truncate would have removed.
    await sink.write([upsert('mirror', { id: 6, v: 'f', n: 1 })], signal());
    await expect(
      sink.write([truncate('mirror'), upsert('mirror', { id: 7, v: 'g', n: 'not a number' })], signal()),
    ).rejects.toThrow(/^Writing to "public"\."mirror" failed: PostgreSQL at [^:]+:\d+: invalid input syntax/);
    expect(await rows('select id::int, v from mirror order by id')).toEqual([{ id: 6, v: 'f' }]);
  });

  it('refuses an existing table without a unique key on the key columns, naming it', async () => {
    await db.client.query('create table no_key (id bigint, v text)');
    await expect(sink.write([upsert('no_key', { id: 1, v: 'x' })], signal())).rejects.toThrow(
      'Table "public"."no_key" has no primary key or unique index on (id)',
    );
  });

  it('writes a bounded batch of 20,000 rows (figure printed for docs/data-plane-postgres.md)', async () => {
    const n = 20_000;
    const batch = Array.from({ length: n }, (_, i) =>
      upsert('bulk', { id: i, name: `row ${i}`, amount: i * 1.5, paid: i % 2 === 0, payload: { i } }),
    );
    await sink.write(batch.slice(0, 10), signal()); // table created outside the measure
    const started = process.hrtime.bigint();
    await sink.write(batch, signal());
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    console.log(`postgres sink: ${n} rows in ${ms.toFixed(0)} ms = ${Math.round((n / ms) * 1000)} rows/s`);
    expect(await rows('select count(*)::int as n from bulk')).toEqual([{ n }]);
  });
});
