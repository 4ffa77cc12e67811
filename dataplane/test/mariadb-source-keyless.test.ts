import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type mysql from 'mysql2/promise';
import { mariadbConnection } from './mariadb-numbered.js';
import { inProcessCapture } from './mariadb-in-process.js';

// A captured table without a primary key on the real MariaDB server: the
// snapshot reads it in one streaming query (no key to page by), and every
// event's key is the whole row image, as the data model says. Then its
// definition altered after the server closed the capture's idle
// connections: read again through a new one.

describe('MariaDB source: a table without a primary key', () => {
  const database = `cdc_keyless_${randomUUID().slice(0, 8)}`;
  let conn: mysql.Connection;
  const run = inProcessCapture(database, 'log');
  let stop: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    conn = await mariadbConnection();
    await conn.query(`create database \`${database}\``);
    await conn.query(`use \`${database}\``);
    await conn.query('create table log (at int not null, what varchar(20))');
    const rows = Array.from({ length: 5_000 }, (_, i) => [i, `entry ${i}`]);
    await conn.query('insert into log values ?', [rows]);
  });
  afterAll(async () => {
    await stop?.();
    await conn.query(`drop database if exists \`${database}\``).catch(() => undefined);
    await conn.end();
  });

  it('snapshots every row by a streaming read and keys each event by the whole row', async () => {
    const { abort, done } = await run.start();
    stop = async () => {
      abort.abort();
      await done;
    };
    const deadline = Date.now() + 30_000;
    while (run.position() === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    const reads = run.events.filter((e) => e.op === 'r');
    expect(reads).toHaveLength(5_000);
    expect(new Set(reads.map((e) => e.after?.at)).size).toBe(5_000);
    expect(reads[17]?.key).toEqual({ at: reads[17]?.after?.at, what: reads[17]?.after?.what });

    await conn.query(`insert into log values (9000, 'late'), (9000, 'late')`);
    await conn.query(`delete from log where at = 3`);
    while (!run.events.some((e) => e.op === 'd') && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    const streamed = run.events.filter((e) => !e.source.snapshot);
    expect(streamed.map((e) => [e.op, e.key])).toEqual([
      ['c', { at: 9000, what: 'late' }],
      ['c', { at: 9000, what: 'late' }],
      ['d', { at: 3, what: 'entry 3' }],
    ]);
  });

  it('reads an altered definition through a new connection when the server closed its idle one', async () => {
    // The capture's idle connections (catalog, snapshot) killed, as wait_timeout would close them.
    const [own] = await conn.query('select connection_id() as id');
    const [idle] = await conn.query(
      `select id from information_schema.processlist where db = ? and command = 'Sleep' and id <> ?`,
      [database, (own as { id: number }[])[0]!.id],
    );
    expect((idle as unknown[]).length).toBeGreaterThan(0);
    for (const { id } of idle as { id: number }[]) await conn.query(`kill connection ${Number(id)}`);
    await conn.query('alter table log add column n int');
    await conn.query(`insert into log values (9001, 'after', 5)`);
    const deadline = Date.now() + 30_000;
    while (!run.events.some((e) => e.after?.at === 9001) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(run.events.find((e) => e.after?.at === 9001)?.after).toEqual({ at: 9001, what: 'after', n: 5 });
  });
});
