import { expect, it } from '@jest/globals';
import type mysql from 'mysql2/promise';
import { describeWithKafka } from '@sluice/testing/kafka';
import { exitedEarly, stopWorker } from '@sluice/testing/kafka-helpers';
import { numberedRow, rowChecksum, type ArrivedEvent } from './numbered-rows.js';
import { gtidSequence, mariadbConnection, writeMariadbTransaction } from './mariadb-numbered.js';
import { mariadbStreamFixture } from './mariadb-stream.js';

// XA transactions, which MariaDB logs in two parts: XA START … XA END and
// XA PREPARE (the rows, in a GTID group of their own), then later XA COMMIT
// or XA ROLLBACK in another group, here from another session. On a MariaDB
// server of the test's own (a prepared transaction left behind by a failed
// run would hold its locks on the shared one): a consumer of the topic must
// see a prepared transaction's rows only once it committed, never those of
// one rolled back, also when the worker was restarted between PREPARE and
// COMMIT, and the worker must not record a position past rows whose outcome
// it has not read.

const gtidOf = async (conn: mysql.Connection) => {
  const [rows] = await conn.query('select @@global.gtid_binlog_pos as p');
  return String((rows as { p: string }[])[0]?.p);
};

/** XA START … XA PREPARE of `ids` on a connection of its own, which then disconnects (the part stays prepared). */
async function prepareXa(url: URL, database: string, xid: string, ids: number[]): Promise<string> {
  const conn = await mariadbConnection(database, url);
  try {
    await conn.query('xa start ?', [xid]);
    const rows = ids.map((id) => numberedRow(id, 0));
    await conn.query('insert into numbered (id, version, label, amount, doc) values ?', [
      rows.map((r) => [r.id, r.version, r.label, r.amount, JSON.stringify(r.doc)]),
    ]);
    await conn.query('xa end ?', [xid]);
    await conn.query('xa prepare ?', [xid]);
    return await gtidOf(conn);
  } finally {
    await conn.end();
  }
}

/**
 * `xa commit` or `xa rollback` of a part another session prepared. The
 * preparing session's end returns at once, while the server detaches its XA
 * transaction a moment later: until `xa recover` lists it, another session
 * gets XAER_NOTA.
 */
async function decideXa(conn: mysql.Connection, outcome: 'commit' | 'rollback', xid: string): Promise<void> {
  for (const deadline = Date.now() + 10_000; ;) {
    const [recovered] = await conn.query('xa recover');
    if ((recovered as { data: unknown }[]).some((r) => String(r.data) === xid)) break;
    if (Date.now() > deadline) throw new Error(`XA transaction ${xid} was never listed by xa recover`);
    await new Promise((r) => setTimeout(r, 50));
  }
  await conn.query(`xa ${outcome} ?`, [xid]);
}

const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i);

describeWithKafka('MariaDB source and XA transactions prepared, then committed or rolled back', () => {
  const f = mariadbStreamFixture('xa', { partitions: 2, privateServer: true });

  it('publishes a prepared part on XA COMMIT only, across a worker restart, and drops one rolled back', async () => {
    const s = f.server;
    const { database, conn } = f.source;
    const config = f.config();
    const ids = (events: ArrivedEvent[]) => new Set(events.map((e) => e.id));
    let worker = await f.startReady(config);
    await f.untilRecorded('0-0-0', () => exitedEarly(worker, 'the worker'));

    // x1 prepared, then a plain transaction after it, read and published.
    const x1Gtid = await prepareXa(s.url, database, 'x1', range(1, 100));
    const plain1 = await writeMariadbTransaction(conn, {
      inserts: range(1001, 10).map((id) => numberedRow(id, 0)),
    });
    await eventuallyArrived(f.arrived, range(1001, 10), () => exitedEarly(worker, 'the worker'));
    const undecided = await f.arrived();
    expect([...ids(undecided)].filter((id) => id <= 100)).toEqual([]);
    // The recorded position stays before x1's rows while its outcome is unknown.
    const held = await f.recorded();
    expect(gtidSequence(held?.gtid ?? '')).toBeLessThan(gtidSequence(x1Gtid));
    expect(gtidSequence(plain1)).toBeGreaterThan(gtidSequence(x1Gtid));

    // Restarted between PREPARE and COMMIT (SIGKILL: nothing flushed on the way out).
    worker.child.kill('SIGKILL');
    await worker.exited;
    worker = await f.startReady(config);
    await decideXa(conn, 'commit', 'x1');
    const x1Commit = await gtidOf(conn);
    await f.untilRecorded(x1Commit, () => exitedEarly(worker, 'the worker'));
    const committed = (await f.arrived()).filter((e) => e.id <= 100);
    expect([...ids(committed)].sort((a, b) => a - b)).toEqual(range(1, 100));
    expect(committed.filter((e) => e.checksum !== rowChecksum({ ...numberedRow(e.id, 0) }))).toEqual([]);
    // Published as changes of the XA COMMIT's transaction.
    expect(new Set(committed.map((e) => e.position))).toEqual(new Set([x1Commit]));

    // x2 prepared, then rolled back from another session; a one-phase XA commit and a plain transaction after.
    await prepareXa(s.url, database, 'x2', range(201, 50));
    await decideXa(conn, 'rollback', 'x2');
    await conn.query("xa start 'x3'");
    await conn.query('insert into numbered (id, version, label, amount, doc) values ?', [
      range(301, 5).map((id) => {
        const r = numberedRow(id, 0);
        return [r.id, r.version, r.label, r.amount, JSON.stringify(r.doc)];
      }),
    ]);
    await conn.query("xa end 'x3'");
    await conn.query("xa commit 'x3' one phase");
    const last = await writeMariadbTransaction(conn, {
      inserts: range(2001, 3).map((id) => numberedRow(id, 0)),
    });
    await f.untilRecorded(last, () => exitedEarly(worker, 'the worker'));
    await stopWorker(worker);
    const all = await f.arrived();
    const seen = ids(all);
    console.info(
      `${all.length} events; x1 held at ${held?.gtid} (prepared ${x1Gtid}), committed ${x1Commit}`,
    );
    expect(range(201, 50).filter((id) => seen.has(id))).toEqual([]);
    expect(range(301, 5).filter((id) => !seen.has(id))).toEqual([]);
    expect(range(2001, 3).filter((id) => !seen.has(id))).toEqual([]);
  });

  it('publishes a part prepared before a server restart when it commits after it', async () => {
    const s = f.server;
    const { database } = f.source;
    const config = f.config();
    const worker = await f.startReady(config);
    const x4Gtid = await prepareXa(s.url, database, 'x4', range(401, 20));
    // The server restarts with x4 prepared (MariaDB keeps it); the worker ends with the connection.
    await s.stop();
    await worker.exited;
    await s.start();
    const conn = await mariadbConnection(database, s.url);
    try {
      const after = await writeMariadbTransaction(conn, {
        inserts: range(3001, 2).map((id) => numberedRow(id, 0)),
      });
      const restarted = await f.startReady(config);
      await eventuallyArrived(f.arrived, range(3001, 2), () => exitedEarly(restarted, 'the worker'));
      const held = await f.recorded();
      expect(gtidSequence(held?.gtid ?? '')).toBeLessThan(gtidSequence(x4Gtid));
      expect(gtidSequence(after)).toBeGreaterThan(gtidSequence(x4Gtid));
      await decideXa(conn, 'commit', 'x4');
      // Nothing else was left prepared (x2 was rolled back).
      expect((await conn.query('xa recover'))[0]).toEqual([]);
      const committed = await gtidOf(conn);
      await f.untilRecorded(committed, () => exitedEarly(restarted, 'the worker'));
      await stopWorker(restarted);
      const seen = new Set((await f.arrived()).map((e) => e.id));
      expect(range(401, 20).filter((id) => !seen.has(id))).toEqual([]);
    } finally {
      await conn.end();
    }
  });
});

async function eventuallyArrived(
  arrived: () => Promise<ArrivedEvent[]>,
  want: number[],
  failFast: () => string | undefined,
  ms = 60_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    const seen = new Set((await arrived()).map((e) => e.id));
    if (want.every((id) => seen.has(id))) return;
    const failure = failFast();
    if (failure) throw new Error(failure);
    if (Date.now() > deadline)
      throw new Error(`rows ${want.filter((id) => !seen.has(id)).join(',')} never arrived`);
    await new Promise((r) => setTimeout(r, 250));
  }
}
