import { describe, expect, it } from '@jest/globals';
import { createServer } from 'node:net';
import { type WorkerConfig } from '@sluice/shared/catalog';
import { OutboundPolicy } from '@sluice/shared/net';
import type { OracleSession } from '../systems/oracle/connection.js';
import type { OracleBindDef } from './oracle-sql.js';
import { engineFor } from '../engines.js';
import { createOracleSink, openOracleSink } from './oracle.js';
import { del, truncate, upsert } from '../../test/sink-records.js';

// The Oracle sink's batch and transaction logic, driven through its session
// seam by a recording fake (no Oracle server runs here): which statements,
// with which binds, in which order, and when it commits or rolls back.

type Call =
  | { op: 'execute'; sql: string; binds: readonly (string | null)[] }
  | { op: 'executeMany'; sql: string; rows: (string | null)[][]; bindDefs: readonly OracleBindDef[] }
  | { op: 'commit' | 'rollback' | 'close' };

const PASSWORD = 'tiger-s3cret-pw';

/** An Oracle-like error as the driver throws them. */
const oraError = (code: string, message: string) => Object.assign(new Error(`${code}: ${message}`), { code });

/** A session that records every call; `tables` answers the describe query; `fail` may throw for a call. */
function recordingSession(
  tables: Record<string, [string, string][]> = {},
  fail: (call: Call) => Error | undefined = () => undefined,
) {
  const calls: Call[] = [];
  let closed = false;
  const record = async (call: Call) => {
    // As the driver: a closed connection takes no more calls.
    if (closed) throw oraError('NJS-003', 'invalid or closed connection');
    if (call.op === 'close') closed = true;
    calls.push(call);
    const error = fail(call);
    if (error) throw error;
  };
  const session: OracleSession = {
    serverVersion: '23.4.0.24.05',
    async execute(sql, binds = []) {
      await record({ op: 'execute', sql, binds });
      if (sql.startsWith('SELECT column_name')) return tables[String(binds[1])] ?? [];
      const created = /^CREATE TABLE "([^"]+)" \((.*), PRIMARY KEY/.exec(sql);
      if (created) {
        const columns = [...(created[2] as string).matchAll(/"([^"]+)" ([A-Z_0-9]+)/g)];
        tables[created[1] as string] = columns.map((m) => [m[1] as string, m[2] as string]);
      }
      return [];
    },
    executeMany: (sql, rows, bindDefs) => record({ op: 'executeMany', sql, rows, bindDefs }),
    commit: () => record({ op: 'commit' }),
    rollback: () => record({ op: 'rollback' }),
    close: () => record({ op: 'close' }),
  };
  return { session, calls };
}

/** The calls as lines: DDL in full, "describe <table>", the first words of DML, or the operation. */
const summary = (calls: Call[]) =>
  calls.map((c) => {
    if (!('sql' in c)) return c.op;
    if (c.sql.startsWith('SELECT column_name') && 'binds' in c) return `describe ${String(c.binds[1])}`;
    if (/^(MERGE|DELETE)/.test(c.sql)) return c.sql.split(' ').slice(0, 3).join(' ');
    return c.sql;
  });

const signal = () => new AbortController().signal;

function sinkWith(session: OracleSession, castsFor?: (t: string) => Record<string, 'datetime'> | undefined) {
  let connects = 0;
  const sink = createOracleSink({
    connect: async () => {
      connects++;
      return session;
    },
    where: 'db.example.com:1521',
    ...(castsFor ? { castsFor } : {}),
  });
  return { sink, connects: () => connects };
}

describe('Oracle sink: one transaction per batch', () => {
  it('creates a missing table before any row, merges, then commits once', async () => {
    const { session, calls } = recordingSession();
    const { sink } = sinkWith(session, (t) => (t === 'orders' ? { placed_at: 'datetime' } : undefined));
    await sink.write(
      [
        upsert('orders', { id: 1, name: 'ada', placed_at: '2024-01-02T03:04:05Z' }),
        upsert('orders', { id: 2, name: 'bob', placed_at: null }),
      ],
      signal(),
    );
    expect(summary(calls)).toEqual([
      'describe ORDERS',
      'CREATE TABLE "ORDERS" ("ID" NUMBER(19), "NAME" VARCHAR2(4000 CHAR), "PLACED_AT" TIMESTAMP(6) WITH TIME ZONE, PRIMARY KEY ("ID"))',
      'MERGE INTO "ORDERS"',
      'commit',
    ]);
    expect(calls[0]).toMatchObject({ binds: [null, 'ORDERS'] });
    expect(calls[2]).toMatchObject({
      rows: [
        ['1', 'ada', '2024-01-02 03:04:05.000000000 +00:00'],
        ['2', 'bob', null],
      ],
    });
  });

  it('a truncate deletes every row in the batch transaction (no TRUNCATE: it would commit), before the rows after it', async () => {
    const { session, calls } = recordingSession({
      ORDERS: [
        ['ID', 'NUMBER'],
        ['NAME', 'VARCHAR2'],
      ],
    });
    const { sink } = sinkWith(session);
    await sink.write(
      [
        upsert('orders', { id: 1, name: 'gone' }),
        truncate('orders'),
        upsert('orders', { id: 2, name: 'kept' }),
        truncate('absent'),
      ],
      signal(),
    );
    expect(summary(calls)).toEqual([
      'describe ORDERS',
      'describe ABSENT',
      'DELETE FROM "ORDERS"',
      'MERGE INTO "ORDERS"',
      'commit',
    ]);
    expect(calls[2]).toMatchObject({ sql: 'DELETE FROM "ORDERS"' });
    expect(calls[3]).toMatchObject({ rows: [['2', 'kept']] });
  });

  it('runs all DDL of a batch before its first row: Oracle DDL commits on its own', async () => {
    const { session, calls } = recordingSession();
    const { sink } = sinkWith(session);
    await sink.write([upsert('a', { id: 1 }), upsert('b', { id: 'x', v: 1.5 })], signal());
    expect(summary(calls)).toEqual([
      'describe A',
      'CREATE TABLE "A" ("ID" NUMBER(19), PRIMARY KEY ("ID"))',
      'describe B',
      'CREATE TABLE "B" ("ID" VARCHAR2(500 CHAR), "V" BINARY_DOUBLE, PRIMARY KEY ("ID"))',
      'MERGE INTO "A"',
      'MERGE INTO "B"',
      'commit',
    ]);
  });

  it('deletes before merging, folds repeated keys, and asks the catalog only for new columns', async () => {
    const { session, calls } = recordingSession({
      ORDERS: [
        ['ID', 'NUMBER'],
        ['NAME', 'VARCHAR2'],
      ],
    });
    const { sink, connects } = sinkWith(session);
    await sink.write([upsert('orders', { id: 1, name: 'ada' })], signal());
    calls.length = 0;
    await sink.write(
      [
        upsert('orders', { id: 2, name: 'old' }),
        del('orders', { id: 2 }),
        upsert('orders', { id: 2, name: 'new' }),
        del('orders', { id: 3 }),
        upsert('orders', { id: 1, name: 'ada lovelace' }),
      ],
      signal(),
    );
    // Cached columns: no describe, no DDL.
    expect(calls).toEqual([
      {
        op: 'executeMany',
        sql: 'DELETE FROM "ORDERS" WHERE "ID" = TO_NUMBER(:1)',
        rows: [['2'], ['3']],
        bindDefs: [{ type: 'string', maxSize: 1 }],
      },
      expect.objectContaining({
        op: 'executeMany',
        rows: [
          ['2', 'new'],
          ['1', 'ada lovelace'],
        ],
      }),
      { op: 'commit' },
    ]);
    calls.length = 0;
    await sink.write([upsert('orders', { id: 4, name: 'cy', total: 9.5 })], signal());
    expect(summary(calls)).toEqual([
      'describe ORDERS',
      'ALTER TABLE "ORDERS" ADD ("TOTAL" BINARY_DOUBLE)',
      'MERGE INTO "ORDERS"',
      'commit',
    ]);
    expect(connects()).toBe(1);
  });

  it('rolls back a refused batch, says why without SQL or values, and looks at the table again next time', async () => {
    const { session, calls } = recordingSession(
      {
        ORDERS: [
          ['ID', 'NUMBER'],
          ['NAME', 'VARCHAR2'],
        ],
      },
      (c) =>
        c.op === 'executeMany'
          ? oraError(
              'ORA-12899',
              'value too large for column "APP"."ORDERS"."NAME" (actual: 5000, maximum: 4000)',
            )
          : undefined,
    );
    const { sink } = sinkWith(session);
    const secretValue = 'x'.repeat(5000);
    const failed = sink.write([upsert('orders', { id: 1, name: secretValue })], signal());
    await expect(failed).rejects.toThrow(
      'Writing to "ORDERS" failed: a value is too long for its column (ORA-12899)',
    );
    await failed.catch((e: Error) => {
      expect(e.message).not.toContain('MERGE');
      expect(e.message).not.toContain(secretValue);
    });
    expect(summary(calls).slice(-2)).toEqual(['MERGE INTO "ORDERS"', 'rollback']);
    expect(calls.some((c) => c.op === 'commit')).toBe(false);
    calls.length = 0;
    await sink.write([upsert('orders', { id: 1, name: 'ok' })], signal()).catch(() => undefined);
    expect(summary(calls)[0]).toBe('describe ORDERS');
  });

  it('refuses a value its column cannot take by the column name, and rolls back', async () => {
    const { session, calls } = recordingSession({
      ORDERS: [
        ['ID', 'NUMBER'],
        ['DAY', 'DATE'],
      ],
    });
    const { sink } = sinkWith(session);
    await expect(sink.write([upsert('orders', { id: 1, day: '31/12/2024' })], signal())).rejects.toThrow(
      'Writing to "ORDERS" failed: Column "day": a value is not an ISO 8601 date',
    );
    expect(summary(calls)).toEqual(['describe ORDERS', 'rollback']);
  });

  it('takes a table created by a concurrent writer (ORA-00955) and goes on', async () => {
    const tables: Record<string, [string, string][]> = {};
    let creates = 0;
    const { session, calls } = recordingSession(tables, (c) => {
      if (c.op === 'execute' && c.sql.startsWith('CREATE TABLE') && creates++ === 0) {
        tables.ORDERS = [['ID', 'NUMBER']]; // the other writer's table
        return oraError('ORA-00955', 'name is already used by an existing object');
      }
      return undefined;
    });
    const { sink } = sinkWith(session);
    await sink.write([upsert('orders', { id: 1, name: 'ada' })], signal());
    expect(summary(calls)).toEqual([
      'describe ORDERS',
      'CREATE TABLE "ORDERS" ("ID" NUMBER(19), "NAME" VARCHAR2(4000 CHAR), PRIMARY KEY ("ID"))',
      'describe ORDERS',
      'ALTER TABLE "ORDERS" ADD ("NAME" VARCHAR2(4000 CHAR))',
      'MERGE INTO "ORDERS"',
      'commit',
    ]);
  });

  it('creates an error table whose message columns take any length', async () => {
    const { session, calls } = recordingSession();
    const { sink } = sinkWith(session, () => undefined);
    const keys = ['subscription_id', 'source_topic', 'source_partition', 'source_offset', 'row_index'];
    const row = {
      subscription_id: 's1',
      source_topic: 'orders',
      source_partition: 0,
      source_offset: '42',
      row_index: 0,
      reason: 'not JSON: Unexpected token',
      message: 'short now, long later',
      message_key: null,
      row: null,
      failed_at: '2024-01-02T03:04:05.678Z',
    };
    await sink.write([upsert('orders_errors', row, keys)], signal());
    expect(summary(calls)[1]).toBe(
      'CREATE TABLE "ORDERS_ERRORS" ("SUBSCRIPTION_ID" VARCHAR2(500 CHAR), "SOURCE_TOPIC" VARCHAR2(500 CHAR), ' +
        '"SOURCE_PARTITION" NUMBER(19), "SOURCE_OFFSET" VARCHAR2(500 CHAR), "ROW_INDEX" NUMBER(19), ' +
        '"REASON" CLOB, "MESSAGE" CLOB, "MESSAGE_KEY" CLOB, "ROW" CLOB, "FAILED_AT" TIMESTAMP(6) WITH TIME ZONE, ' +
        'PRIMARY KEY ("SUBSCRIPTION_ID", "SOURCE_TOPIC", "SOURCE_PARTITION", "SOURCE_OFFSET", "ROW_INDEX"))',
    );
  });

  it('deletes nothing and creates nothing when a delete-only batch names a missing table', async () => {
    const { session, calls } = recordingSession();
    const { sink } = sinkWith(session);
    await sink.write([del('gone', { id: 1 })], signal());
    expect(summary(calls)).toEqual(['describe GONE', 'commit']);
  });

  it('refuses rows without a key value or with names Oracle cannot store, before touching the database', async () => {
    const { session, calls } = recordingSession();
    const { sink } = sinkWith(session);
    await expect(sink.write([upsert('orders', { id: null, name: 'a' })], signal())).rejects.toThrow(
      /no value for a primary-key column \(id\)/,
    );
    await expect(sink.write([upsert('say "hi"', { id: 1 })], signal())).rejects.toThrow(
      '"say "hi"" cannot be an Oracle identifier',
    );
    expect(calls).toEqual([]);
  });

  it('closes the session when the write is aborted, and never commits', async () => {
    const controller = new AbortController();
    const tables: Record<string, [string, string][]> = {}; // one database, two sessions
    const first = recordingSession(tables, (c) => {
      if (c.op === 'executeMany') controller.abort(new Error('worker stopping'));
      return undefined;
    });
    const second = recordingSession(tables);
    const sessions = [first.session, second.session];
    const sink = createOracleSink({ connect: async () => sessions.shift()!, where: 'db.example.com:1521' });
    await expect(sink.write([upsert('orders', { id: 1 })], controller.signal)).rejects.toThrow(
      'worker stopping',
    );
    expect(first.calls.map((c) => c.op)).toEqual(['execute', 'execute', 'executeMany', 'close']);
    // The next batch opens a new session, which looks at the table again.
    await sink.write([upsert('orders', { id: 2 })], signal());
    expect(summary(second.calls)).toEqual(['describe ORDERS', 'MERGE INTO "ORDERS"', 'commit']);
    expect(sessions).toEqual([]);
  });

  it('reports a refused connection in words, without the password', async () => {
    const sink = createOracleSink({
      connect: async () => {
        throw Object.assign(
          new Error(
            'NJS-503: connection to host 10.0.0.9 port 1521 could not be established. (CONNECTION_ID=abc==)\nconnect ECONNREFUSED 10.0.0.9:1521',
          ),
          { code: 'NJS-503' },
        );
      },
      where: 'db.example.com:1521',
    });
    const failed = sink.write([upsert('orders', { id: 1 })], signal());
    await expect(failed).rejects.toThrow(
      'Could not connect to Oracle at db.example.com:1521: connection refused (nothing listens there)',
    );
    await failed.catch((e: Error) => expect(e.message).not.toContain(PASSWORD));
    const login = createOracleSink({
      connect: async () => {
        throw oraError('ORA-01017', 'invalid credential or not authorized; logon denied');
      },
      where: 'db.example.com:1521',
    });
    await expect(login.write([upsert('orders', { id: 1 })], signal())).rejects.toThrow(
      'Oracle at db.example.com:1521 refused the login: check the user name and password (ORA-01017)',
    );
  });
});

describe('ORACLE_TARGET worker wiring (the real thin client, no Oracle server)', () => {
  const workerConfig = (host: string, port: number) =>
    ({
      role: 'target',
      connector_type: 'ORACLE_TARGET',
      connector_id: 'c1',
      configuration: {
        host,
        port: String(port),
        database: 'FREEPDB1',
        user: 'sluice',
        password: PASSWORD,
        server_name: 'oracle-1',
        server_id: '1',
      },
      subscriptions: [],
    }) as unknown as WorkerConfig;

  it('is a registered target engine', () => {
    expect(typeof engineFor(workerConfig('127.0.0.1', 1521))).toBe('object');
  });

  it('fails a batch in words when nothing listens, and under the policy for a denied address', async () => {
    const probe = createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const port = (probe.address() as { port: number }).port;
    await new Promise<void>((r) => probe.close(() => r()));
    const policy = new OutboundPolicy({ deny: ['169.254.0.0/16'] });
    const closed = await openOracleSink(workerConfig('127.0.0.1', port), { policy });
    const failed = closed.write([upsert('orders', { id: 1 })], signal());
    await expect(failed).rejects.toThrow(
      `Could not connect to Oracle at 127.0.0.1:${port}: connection refused (nothing listens there)`,
    );
    await failed.catch((e: Error) => expect(e.message).not.toContain(PASSWORD));
    const denied = await openOracleSink(workerConfig('169.254.169.254', 1521), { policy });
    await expect(denied.write([upsert('orders', { id: 1 })], signal())).rejects.toThrow(
      'Connections to 169.254.169.254 are not allowed',
    );
  });
});
