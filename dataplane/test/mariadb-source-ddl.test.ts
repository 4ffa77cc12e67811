import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type mysql from 'mysql2/promise';
import { mariadbConnection } from './mariadb-numbered.js';
import { inProcessCapture, type InProcessCapture } from './mariadb-in-process.js';
import { COLUMNS, EXPECTED_HIGH, EXPECTED_LOW, HIGH, LOW, NAMES } from './mariadb-typed-rows.js';

// ALTER TABLE on a captured table of the real MariaDB server, with and
// without the column names in the log (binlog_row_metadata FULL / NO_LOG):
// columns added, dropped, renamed and retyped while the capture streams are
// followed in the events after each statement; changes written before such
// statements while it was stopped are read, when it starts again, with the
// definition they were written with (the one recorded with its position, or
// the log's own description), and the statements followed after them. Two
// statements while stopped with changes between them cannot be matched
// without the names: the worker stops in error naming the statement after
// which the changes stopped fitting, never mislabelling values.

describe.each([
  ['without column names in the log (binlog_row_metadata=NO_LOG)', 'NO_LOG'],
  ['with column names in the log (binlog_row_metadata=FULL)', 'FULL'],
])('MariaDB source: a captured table altered during and between captures, %s', (_, metadata) => {
  const database = `cdc_ddl_${randomUUID().slice(0, 8)}`;
  let conn: mysql.Connection;
  let original = 'NO_LOG';

  beforeAll(async () => {
    conn = await mariadbConnection();
    // What the server writes into its table maps from now on (a global setting, put back after).
    const [rows] = await conn.query('select @@global.binlog_row_metadata as m');
    original = String((rows as { m: string }[])[0]?.m);
    await conn.query('set global binlog_row_metadata = ?', [metadata]);
    await conn.query(`create database \`${database}\``);
    await conn.query(`use \`${database}\``);
  });
  afterAll(async () => {
    await conn.query('set global binlog_row_metadata = ?', [original]).catch(() => undefined);
    await conn.query(`drop database if exists \`${database}\``).catch(() => undefined);
    await conn.end();
  });

  const after = (run: InProcessCapture, id: number) => run.events.find((e) => e.after?.id === id)?.after;
  const until = async (run: InProcessCapture, test: () => boolean) => {
    const deadline = Date.now() + 30_000;
    while (!test()) {
      if (Date.now() > deadline)
        throw new Error(`not after 30 s: ${JSON.stringify(run.events.map((e) => e.after))}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  /** A captured table `name` with one row, and its capture started and past its snapshot. */
  const captured = async (name: string) => {
    await conn.query(`create table ${name} (id int primary key, a varchar(10), b int, c varchar(5))`);
    await conn.query(`insert into ${name} values (1, 'one', 11, 'x')`);
    const run = inProcessCapture(database, name);
    const first = await run.start();
    await until(run, () => run.position() !== null && after(run, 1) !== undefined);
    return { run, first };
  };

  it('follows columns added, dropped, renamed and retyped while it streams', async () => {
    const { run, first } = await captured('live');
    const steps: [string, string][] = [
      ['alter table live add column d int', `insert into live values (2, 'two', 22, 'y', 2)`],
      ['alter table live drop column a', `insert into live values (3, 33, 'z', 3)`],
      [
        '/* a tool */ ALTER ONLINE TABLE live RENAME COLUMN c TO e',
        `insert into live values (4, 44, 'w', 4)`,
      ],
      ['alter table live modify b varchar(20)', `insert into live values (5, 'fifty-five', 'v', 5)`],
    ];
    for (const [i, [ddl, insert]] of steps.entries()) {
      await conn.query(ddl);
      await conn.query(insert);
      // Without the names, a statement is followed by reading the catalog when the log reaches it:
      // the capture must have read the last one before the next is made. With them, no wait.
      if (metadata !== 'FULL') await until(run, () => after(run, i + 2) !== undefined);
    }
    await until(run, () => after(run, 5) !== undefined);
    expect(after(run, 2)).toEqual({ id: 2, a: 'two', b: 22, c: 'y', d: 2 });
    expect(after(run, 3)).toEqual({ id: 3, b: 33, c: 'z', d: 3 });
    expect(after(run, 4)).toEqual({ id: 4, b: 44, e: 'w', d: 4 });
    expect(after(run, 5)).toEqual({ id: 5, b: 'fifty-five', e: 'v', d: 5 });
    // The key of each event is the primary key, whatever the statements did to the other columns.
    expect(run.events.filter((e) => e.op === 'c').map((e) => e.key)).toEqual(
      [2, 3, 4, 5].map((id) => ({ id })),
    );
    first.abort.abort();
    await first.done;
  });

  it('reads the changes written before each statement while it was stopped with the definition they had', async () => {
    const { run, first } = await captured('stopped');
    await conn.query(`insert into stopped values (2, 'two', 22, 'y')`);
    await until(run, () => after(run, 2) !== undefined);
    first.abort.abort();
    await first.done;

    // Stopped: a row of each definition, each statement after it.
    await conn.query(`insert into stopped values (3, 'three', 33, 'z')`);
    await conn.query('alter table stopped drop column a');
    await conn.query(`insert into stopped values (4, 44, 'w')`);
    const second = await run.start();
    await until(run, () => after(run, 4) !== undefined);
    expect(after(run, 3)).toEqual({ id: 3, a: 'three', b: 33, c: 'z' });
    expect(after(run, 4)).toEqual({ id: 4, b: 44, c: 'w' });
    second.abort.abort();
    await second.done;

    await conn.query(`insert into stopped values (5, 55, 'v')`);
    await conn.query('alter table stopped rename column c to e');
    await conn.query(`insert into stopped values (6, 66, 'u')`);
    const third = await run.start();
    await until(run, () => after(run, 6) !== undefined);
    expect(after(run, 5)).toEqual({ id: 5, b: 55, c: 'v' });
    expect(after(run, 6)).toEqual({ id: 6, b: 66, e: 'u' });
    third.abort.abort();
    await third.done;

    await conn.query(`insert into stopped values (7, 77, 't')`);
    await conn.query('alter table stopped modify b varchar(20)');
    await conn.query(`insert into stopped values (8, 'eighty-eight', 's')`);
    const fourth = await run.start();
    await until(run, () => after(run, 8) !== undefined);
    expect(after(run, 7)).toEqual({ id: 7, b: 77, e: 't' });
    expect(after(run, 8)).toEqual({ id: 8, b: 'eighty-eight', e: 's' });
    fourth.abort.abort();
    await fourth.done;
  });

  // Two statements while it was stopped, with a row before, between and after them.
  const twice = [
    {
      name: 'a column dropped, then another retyped',
      table: 'twice_retyped',
      first: 'drop column a',
      second: 'modify b varchar(20)',
      rows: ["(2, 'two', 22, 'y')", "(3, 33, 'z')", "(4, 'forty-four', 'w')"],
      expected: [
        { id: 2, a: 'two', b: 22, c: 'y' },
        { id: 3, b: 33, c: 'z' },
        { id: 4, b: 'forty-four', c: 'w' },
      ],
    },
    {
      // A rename keeps every storage type: by position the rows between would fit the catalog's later names.
      name: 'a column added, then another renamed',
      table: 'twice_renamed',
      first: 'add column d int',
      second: 'rename column c to e',
      rows: ["(2, 'two', 22, 'y')", "(3, 'three', 33, 'z', 3)", "(4, 'four', 44, 'w', 4)"],
      expected: [
        { id: 2, a: 'two', b: 22, c: 'y' },
        { id: 3, a: 'three', b: 33, c: 'z', d: 3 },
        { id: 4, a: 'four', b: 44, e: 'w', d: 4 },
      ],
    },
  ];
  it.each(twice)(
    metadata === 'FULL'
      ? 'follows two statements while it was stopped, with changes between them: $name'
      : 'stops in error naming the first of two statements while it was stopped, with changes between them: $name',
    async ({ table, first: firstDdl, second: secondDdl, rows, expected }) => {
      const { run, first } = await captured(table);
      first.abort.abort();
      await first.done;
      await conn.query(`insert into ${table} values ${rows[0]}`);
      await conn.query(`alter table ${table} ${firstDdl}`);
      await conn.query(`insert into ${table} values ${rows[1]}`);
      await conn.query(`alter table ${table} ${secondDdl}`);
      await conn.query(`insert into ${table} values ${rows[2]}`);
      const second = await run.start();
      if (metadata === 'FULL') {
        await until(run, () => after(run, 4) !== undefined);
        expect([2, 3, 4].map((id) => after(run, id))).toEqual(expected);
        second.abort.abort();
        await second.done;
        return;
      }
      await expect(second.done).rejects.toThrow(
        new RegExp(
          `${database}\\.${table} .*\`alter table ${table} ${firstDdl}\`, which this capture read, .*binlog_row_metadata=FULL`,
        ),
      );
      // Everything before the statement was read right; nothing after it was guessed.
      expect(after(run, 2)).toEqual(expected[0]);
      expect(after(run, 3)).toBeUndefined();
      expect(after(run, 4)).toBeUndefined();
    },
  );

  if (metadata === 'FULL') {
    it('reads every column type by the log’s own description, once the table no longer has those columns', async () => {
      // TIMESTAMP literals are read in the session's zone: UTC, as the expectations are written.
      await conn.query("set time_zone = '+00:00'");
      await conn.query(`create table typed (id int primary key, ${COLUMNS})`);
      const run = inProcessCapture(database, 'typed');
      const first = await run.start();
      await until(run, () => run.position() !== null);
      first.abort.abort();
      await first.done;
      // Stopped: every column renamed, rows of every type, every column renamed again. Neither the
      // definition recorded with the position nor the catalog knows the columns of those rows.
      const rename = (from: string, to: string) =>
        conn.query(
          `alter table typed ${NAMES.map((n) => `rename column ${n}${from} to ${n}${to}`).join(', ')}`,
        );
      await rename('', '_then');
      await conn.query(`insert into typed values (1, ${LOW}), (2, ${HIGH})`);
      await conn.query('insert into typed (id) values (3)');
      await rename('_then', '_now');
      const second = await run.start();
      await until(run, () => after(run, 3) !== undefined);
      const then = (values: Record<string, unknown>) =>
        Object.fromEntries(Object.entries(values).map(([k, v]) => [`${k}_then`, v]));
      // As the catalog reads them, but MariaDB's JSON: its alias is a CHECK the log does not carry, so it is text.
      expect(after(run, 1)).toEqual({ id: 1, ...then({ ...EXPECTED_LOW, j: '[]' }) });
      expect(after(run, 2)).toEqual({
        id: 2,
        ...then({ ...EXPECTED_HIGH, j: '{"a":{"b":[1,2.5,"s",null,true]}}' }),
      });
      expect(after(run, 3)).toEqual({ id: 3, ...then(Object.fromEntries(NAMES.map((n) => [n, null]))) });
      second.abort.abort();
      await second.done;
    });
  }
});
