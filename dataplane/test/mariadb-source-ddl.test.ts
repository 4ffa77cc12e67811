import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import type mysql from 'mysql2/promise';
import { mariadbConnection } from './mariadb-numbered.js';
import { inProcessCapture } from './mariadb-in-process.js';

// ALTER TABLE on a captured table of the real MariaDB server: a column added
// while the capture streams is in the events after it; columns added while
// it is stopped are followed when it reads the older changes again (each
// event carries the columns its row had), at the end of the table by
// position, anywhere when the log names the columns; a column dropped while
// it is stopped cannot be matched to the older changes, and stops it in
// error naming the table, never mislabelling values.

describe.each([
  ['by position (binlog_row_metadata=NO_LOG)', 'NO_LOG'],
  ['by name (binlog_row_metadata=FULL)', 'FULL'],
])(
  'MariaDB source: a captured table altered during and between captures, columns matched %s',
  (_, metadata) => {
    const database = `cdc_ddl_${randomUUID().slice(0, 8)}`;
    let conn: mysql.Connection;
    const run = inProcessCapture(database, 't');
    const events = run.events;
    let original = 'NO_LOG';

    beforeAll(async () => {
      conn = await mariadbConnection();
      // What the server writes into its table maps from now on (a global setting, put back after).
      const [rows] = await conn.query('select @@global.binlog_row_metadata as m');
      original = String((rows as { m: string }[])[0]?.m);
      await conn.query('set global binlog_row_metadata = ?', [metadata]);
      await conn.query(`create database \`${database}\``);
      await conn.query(`use \`${database}\``);
      await conn.query('create table t (id int primary key, a varchar(10))');
      await conn.query(`insert into t values (1, 'one')`);
    });
    afterAll(async () => {
      await conn.query('set global binlog_row_metadata = ?', [original]).catch(() => undefined);
      await conn.query(`drop database if exists \`${database}\``).catch(() => undefined);
      await conn.end();
    });

    const capture = () => run.start();
    const after = (id: number) => events.find((e) => e.after?.id === id)?.after;
    const until = async (test: () => boolean) => {
      const deadline = Date.now() + 30_000;
      while (!test()) {
        if (Date.now() > deadline)
          throw new Error(`not after 30 s: ${JSON.stringify(events.map((e) => e.after))}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };

    it('follows added columns live and on a replay, and refuses a dropped one', async () => {
      const first = await capture();
      await until(() => run.position() !== null);
      expect(after(1)).toEqual({ id: 1, a: 'one' });
      await conn.query('alter table t add column b int');
      await conn.query(`insert into t values (2, 'two', 22)`);
      await until(() => after(2) !== undefined);
      expect(after(2)).toEqual({ id: 2, a: 'two', b: 22 });
      first.abort.abort();
      await first.done;

      // Stopped: a row, then another column, then a row with it.
      await conn.query(`insert into t values (3, 'three', 33)`);
      await conn.query(`alter table t add column c varchar(5) default 'z'`);
      await conn.query(`insert into t values (4, 'four', 44, 'q')`);
      const second = await capture();
      await until(() => after(4) !== undefined);
      expect(after(3)).toEqual({ id: 3, a: 'three', b: 33 });
      expect(after(4)).toEqual({ id: 4, a: 'four', b: 44, c: 'q' });
      second.abort.abort();
      await second.done;

      if (metadata === 'FULL') {
        // Column names in the log: a column added before the others is no trouble for older rows.
        await conn.query(`insert into t values (6, 'six', 66, 's')`);
        await conn.query(`alter table t add column x varchar(10) default 'new' after id`);
        await conn.query(`insert into t values (7, 'ex', 'seven', 77, 't')`);
        const names = await capture();
        await until(() => after(7) !== undefined);
        expect(after(6)).toEqual({ id: 6, a: 'six', b: 66, c: 's' });
        expect(after(7)).toEqual({ id: 7, x: 'ex', a: 'seven', b: 77, c: 't' });
        names.abort.abort();
        await names.done;
      }

      // Stopped: a row, then a column of it dropped.
      await conn.query(`insert into t (id, a, b, c) values (5, 'five', 55, 'r')`);
      await conn.query('alter table t drop column a');
      const third = await capture();
      await expect(third.done).rejects.toThrow(
        new RegExp(`rows of ${database}\\.t do not match its current definition .*take a new snapshot`),
      );
      expect(after(5)).toBeUndefined();
    });
  },
);
