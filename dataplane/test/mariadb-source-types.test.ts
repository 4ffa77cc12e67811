import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type mysql from 'mysql2/promise';
import { mariadbConnection } from './mariadb-numbered.js';
import { inProcessCapture } from './mariadb-in-process.js';
import { COLUMNS, EXPECTED_HIGH, EXPECTED_LOW, HIGH, LOW, NAMES } from './mariadb-typed-rows.js';

// The types table of docs/data-plane-mysql.md, held against the real MariaDB
// server: rows of every column type are read by the snapshot (text
// protocol), then copied on the server to new rows that the binary log
// carries, updated and deleted. Each event's values must be the table's, the
// same from both paths (a target cannot tell a snapshot row from a streamed one).

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
