import { describe, expect, it } from '@jest/globals';
import {
  deleteStatement,
  mergeStatement,
  oracleDdlFor,
  oracleName,
  oracleTableRef,
  oracleText,
  plannedOracleTypes,
  valueKind,
} from './oracle-sql.js';

// The SQL the Oracle sink sends, asserted as text with its bind values: no
// Oracle server runs here (docs/data-plane.md, "Oracle target").

const orders = oracleTableRef('orders');

describe('Oracle names', () => {
  it('folds plain names to upper case and keeps every other name exactly', () => {
    expect(oracleName('customer_id')).toBe('CUSTOMER_ID');
    expect(oracleName('OrderTotal')).toBe('ORDERTOTAL');
    expect(oracleName('Unit Price')).toBe('Unit Price');
    expect(oracleName('2fa')).toBe('2fa');
    expect(oracleName('naïve')).toBe('naïve');
    expect(oracleName('date')).toBe('DATE');
  });

  it('refuses names Oracle cannot store, naming them', () => {
    expect(() => oracleName('say "hi"')).toThrow('"say "hi"" cannot be an Oracle identifier');
    expect(() => oracleName('')).toThrow('An empty name');
    expect(oracleName('a'.repeat(128))).toBe('A'.repeat(128));
    expect(() => oracleName('a'.repeat(129))).toThrow("longer than Oracle's 128-byte name limit");
    // 64 two-byte characters are 128 bytes; 65 are too many.
    expect(oracleName('é'.repeat(64))).toBe('é'.repeat(64));
    expect(() => oracleName('é'.repeat(65))).toThrow('128-byte');
  });

  it('reads OWNER.TABLE only when both parts are plain names', () => {
    expect(oracleTableRef('sales.orders')).toEqual({ owner: 'SALES', table: 'ORDERS' });
    expect(oracleTableRef('orders')).toEqual({ owner: null, table: 'ORDERS' });
    expect(oracleTableRef('my orders.v2')).toEqual({ owner: null, table: 'my orders.v2' });
  });
});

describe('oracleDdlFor', () => {
  it('creates a table typed from the casts, the values otherwise, with the key as primary key', () => {
    const rows = [
      {
        id: 1,
        amount: 1.5,
        paid: true,
        placed_at: '2024-01-02T03:04:05Z',
        day: '2024-01-02',
        items: [{ sku: 'a', qty: 2 }],
        note: null,
        'Unit Price': 3,
      },
    ];
    expect(oracleDdlFor(orders, null, rows, ['id'], { placed_at: 'datetime', day: 'date' })).toEqual([
      'CREATE TABLE "ORDERS" ("ID" NUMBER(19), "AMOUNT" BINARY_DOUBLE, "PAID" NUMBER(1), ' +
        '"PLACED_AT" TIMESTAMP(6) WITH TIME ZONE, "DAY" DATE, "ITEMS" CLOB, "NOTE" VARCHAR2(4000 CHAR), ' +
        '"Unit Price" NUMBER(19), PRIMARY KEY ("ID"))',
    ]);
  });

  it('gives text keys of a composite key an indexable length', () => {
    const rows = [{ region: 'eu', order_no: 'A-1', total: 2 }];
    expect(oracleDdlFor(oracleTableRef('sales.orders'), null, rows, ['region', 'order_no'])).toEqual([
      'CREATE TABLE "SALES"."ORDERS" ("REGION" VARCHAR2(500 CHAR), "ORDER_NO" VARCHAR2(500 CHAR), ' +
        '"TOTAL" NUMBER(19), PRIMARY KEY ("REGION", "ORDER_NO"))',
    ]);
  });

  it('adds only the missing columns to an existing table, and nothing when none is missing', () => {
    const existing = new Map([
      ['ID', 'NUMBER'],
      ['NAME', 'VARCHAR2'],
    ]);
    expect(
      oracleDdlFor(orders, existing, [{ id: 1, name: 'a', at: '07:05:00', flags: { a: 1 } }], ['id'], {
        at: 'time',
      }),
    ).toEqual(['ALTER TABLE "ORDERS" ADD ("AT" VARCHAR2(32 CHAR), "FLAGS" CLOB)']);
    expect(oracleDdlFor(orders, existing, [{ id: 1, name: 'a' }], ['id'])).toEqual([]);
    expect(plannedOracleTypes(existing, [{ id: 1, total: 2.5 }], ['id'])).toEqual(
      new Map([
        ['ID', 'NUMBER'],
        ['NAME', 'VARCHAR2'],
        ['TOTAL', 'BINARY_DOUBLE'],
      ]),
    );
  });

  it('makes text longer than VARCHAR2 takes, or hinted as long, a CLOB', () => {
    const rows = [{ id: 1, body: 'é'.repeat(2001), short: 'x', note: 'y' }];
    expect(oracleDdlFor(orders, null, rows, ['id'], { note: 'clob' })).toEqual([
      'CREATE TABLE "ORDERS" ("ID" NUMBER(19), "BODY" CLOB, "SHORT" VARCHAR2(4000 CHAR), "NOTE" CLOB, PRIMARY KEY ("ID"))',
    ]);
  });

  it('refuses two names Oracle would store as one column', () => {
    expect(() => oracleDdlFor(orders, null, [{ id: 1, ID: 2 }], ['id'])).toThrow(
      'Columns "id" and "ID" are the same Oracle column ID',
    );
  });
});

describe('mergeStatement', () => {
  it('upserts by key with conversions, NULLs, dates and nested JSON as text', () => {
    const columns = [
      { name: 'id', type: 'NUMBER' },
      { name: 'Customer Name', type: 'VARCHAR2' },
      { name: 'placed_at', type: 'TIMESTAMP(6) WITH TIME ZONE' },
      { name: 'day', type: 'DATE' },
      { name: 'paid', type: 'NUMBER' },
      { name: 'amount', type: 'BINARY_DOUBLE' },
      { name: 'items', type: 'CLOB' },
    ];
    const rows = [
      {
        id: 1,
        'Customer Name': 'Zoë',
        placed_at: '2024-02-29T23:00:01.250000-03:30',
        day: '2024-02-29',
        paid: true,
        amount: 12.5,
        items: [{ sku: 'a', qty: 2 }],
      },
      {
        id: 2,
        'Customer Name': null,
        placed_at: '2024-03-01T00:00:00',
        day: null,
        paid: false,
        amount: null,
        items: null,
      },
    ];
    const s = mergeStatement(orders, columns, ['id'], rows);
    expect(s.sql).toBe(
      'MERGE INTO "ORDERS" t USING (SELECT TO_NUMBER(:1) AS "ID", :2 AS "Customer Name", ' +
        `TO_TIMESTAMP_TZ(:3, 'YYYY-MM-DD HH24:MI:SS.FF9 TZH:TZM') AS "PLACED_AT", ` +
        `TO_DATE(:4, 'YYYY-MM-DD HH24:MI:SS') AS "DAY", TO_NUMBER(:5) AS "PAID", ` +
        'TO_BINARY_DOUBLE(:6) AS "AMOUNT", :7 AS "ITEMS" FROM dual) s ON (t."ID" = s."ID") ' +
        'WHEN MATCHED THEN UPDATE SET t."Customer Name" = s."Customer Name", t."PLACED_AT" = s."PLACED_AT", ' +
        't."DAY" = s."DAY", t."PAID" = s."PAID", t."AMOUNT" = s."AMOUNT", t."ITEMS" = s."ITEMS" ' +
        'WHEN NOT MATCHED THEN INSERT ("ID", "Customer Name", "PLACED_AT", "DAY", "PAID", "AMOUNT", "ITEMS") ' +
        'VALUES (s."ID", s."Customer Name", s."PLACED_AT", s."DAY", s."PAID", s."AMOUNT", s."ITEMS")',
    );
    expect(s.rows).toEqual([
      [
        '1',
        'Zoë',
        '2024-02-29 23:00:01.250000000 -03:30',
        '2024-02-29 00:00:00',
        '1',
        '12.5',
        '[{"sku":"a","qty":2}]',
      ],
      ['2', null, '2024-03-01 00:00:00.000000000 +00:00', null, '0', null, null],
    ]);
    expect(s.bindDefs).toEqual([
      { type: 'string', maxSize: 1 },
      { type: 'string', maxSize: 4 }, // "Zoë" is 4 bytes
      { type: 'string', maxSize: 36 },
      { type: 'string', maxSize: 19 },
      { type: 'string', maxSize: 1 },
      { type: 'string', maxSize: 4 },
      { type: 'clob' },
    ]);
  });

  it('matches on every column of a composite key and updates the others', () => {
    const columns = [
      { name: 'region', type: 'VARCHAR2' },
      { name: 'order_no', type: 'VARCHAR2' },
      { name: 'qty', type: 'NUMBER' },
    ];
    const s = mergeStatement(
      oracleTableRef('sales.orders'),
      columns,
      ['region', 'order_no'],
      [{ region: 'eu', order_no: 'A-1', qty: 3 }],
    );
    expect(s.sql).toBe(
      'MERGE INTO "SALES"."ORDERS" t USING (SELECT :1 AS "REGION", :2 AS "ORDER_NO", TO_NUMBER(:3) AS "QTY" ' +
        'FROM dual) s ON (t."REGION" = s."REGION" AND t."ORDER_NO" = s."ORDER_NO") ' +
        'WHEN MATCHED THEN UPDATE SET t."QTY" = s."QTY" ' +
        'WHEN NOT MATCHED THEN INSERT ("REGION", "ORDER_NO", "QTY") VALUES (s."REGION", s."ORDER_NO", s."QTY")',
    );
    expect(s.rows).toEqual([['eu', 'A-1', '3']]);
  });

  it('has no WHEN MATCHED clause when the rows have only key columns', () => {
    const s = mergeStatement(orders, [{ name: 'id', type: 'NUMBER' }], ['id'], [{ id: 7 }]);
    expect(s.sql).toBe(
      'MERGE INTO "ORDERS" t USING (SELECT TO_NUMBER(:1) AS "ID" FROM dual) s ON (t."ID" = s."ID") ' +
        'WHEN NOT MATCHED THEN INSERT ("ID") VALUES (s."ID")',
    );
  });
});

describe('deleteStatement', () => {
  it('deletes by every key column, converted to the column type', () => {
    const keys = [
      { name: 'region', type: 'VARCHAR2' },
      { name: 'order_no', type: 'NUMBER' },
    ];
    const s = deleteStatement(orders, keys, [
      { region: 'eu', order_no: 1 },
      { region: 'us', order_no: 22 },
    ]);
    expect(s.sql).toBe('DELETE FROM "ORDERS" WHERE "REGION" = :1 AND "ORDER_NO" = TO_NUMBER(:2)');
    expect(s.rows).toEqual([
      ['eu', '1'],
      ['us', '22'],
    ]);
    expect(s.bindDefs).toEqual([
      { type: 'string', maxSize: 2 },
      { type: 'string', maxSize: 2 },
    ]);
  });
});

describe('values as bound text', () => {
  it('reads the kind of a column from its Oracle type', () => {
    expect(
      [
        'NUMBER',
        'NUMBER(19)',
        'FLOAT',
        'BINARY_DOUBLE',
        'DATE',
        'TIMESTAMP(6)',
        'TIMESTAMP(6) WITH TIME ZONE',
        'TIMESTAMP(9) WITH LOCAL TIME ZONE',
        'CLOB',
        'JSON',
        'BOOLEAN',
        'VARCHAR2',
        'NVARCHAR2',
      ].map(valueKind),
    ).toEqual([
      'number',
      'number',
      'number',
      'binary_double',
      'date',
      'timestamp',
      'timestamp_tz',
      'timestamp_tz',
      'clob',
      'json',
      'boolean',
      'text',
      'text',
    ]);
  });

  it('moves an offset date-time to UTC for DATE and TIMESTAMP, keeps it for WITH TIME ZONE', () => {
    const v = '2024-12-31T23:30:00.5+02:00';
    expect(oracleText(v, 'date', 'c')).toBe('2024-12-31 21:30:00');
    expect(oracleText(v, 'timestamp', 'c')).toBe('2024-12-31 21:30:00.500000000');
    expect(oracleText(v, 'timestamp_tz', 'c')).toBe('2024-12-31 23:30:00.500000000 +02:00');
    expect(oracleText('2025-01-01T01:00:00-01:30', 'date', 'c')).toBe('2025-01-01 02:30:00');
    expect(oracleText(Date.UTC(2024, 0, 2, 3, 4, 5, 6), 'timestamp_tz', 'c')).toBe(
      '2024-01-02 03:04:05.006000000 +00:00',
    );
  });

  it('binds booleans, non-finite floats and text', () => {
    expect(oracleText(true, 'boolean', 'c')).toBe('TRUE');
    expect(oracleText(false, 'number', 'c')).toBe('0');
    expect(oracleText(Number.POSITIVE_INFINITY, 'binary_double', 'c')).toBe('Inf');
    expect(oracleText({ a: [1, null] }, 'text', 'c')).toBe('{"a":[1,null]}');
    expect(oracleText('{"already":"json"}', 'json', 'c')).toBe('{"already":"json"}');
  });

  it('refuses a value its column cannot take, naming the column and not the value', () => {
    expect(() => oracleText('31/12/2024 secret', 'date', 'birthday')).toThrow(
      'Column "birthday": a value is not an ISO 8601 date',
    );
    expect(() => oracleText('31/12/2024 secret', 'date', 'birthday')).not.toThrow(/secret/);
    expect(() => oracleText({ n: 1 }, 'number', 'qty')).toThrow('Column "qty": a value is not a number');
    expect(() => oracleText(Number.NaN, 'number', 'qty')).toThrow('Column "qty": NaN is not a NUMBER');
  });
});
