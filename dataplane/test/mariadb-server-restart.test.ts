import { afterAll, expect, it } from '@jest/globals';
import type mysql from 'mysql2/promise';
import { describeWithKafka } from '@sluice/testing/kafka';
import { eventually, topicSize } from '@sluice/testing/kafka-helpers';
import { numberedRow } from './numbered-rows.js';
import {
  gtidSequence,
  mariadbConnection,
  partitionEnds,
  writeMariadbTransaction,
} from './mariadb-numbered.js';
import { mariadbStreamFixture } from './mariadb-stream.js';
import { expectEveryRowIntact } from './interrupted-stream.js';

// The MariaDB server itself going away under a streaming MARIADB_SOURCE
// worker, on a server of the test's own (testing/src/mariadb-server.ts; the
// shared one must stay up for the other tests): numbered rows inserted in
// transactions of 250 while the server is shut down cleanly (SIGTERM) and,
// later, killed (SIGKILL of mariadbd), each time started again after a few
// seconds; then frozen (SIGSTOP: its connections stay open, nothing answers,
// as when its host hangs or restarts behind a silent network) until the
// worker noticed, then continued. The worker is restarted whenever it ends, as the runtimes do
// (docs/data-plane.md, "Worker restarts"). The writer carries on across the
// outages as an application would: a transaction whose commit went
// unanswered is looked up once the server is back, and written again only
// if it is not there.
//
// What a user notices, and so what is checked:
// - every numbered row is on the broker, intact (checked id by id);
// - while the server is down, what the worker says (its termination
//   message, its connector's error) names the server and why, the silence
//   of a frozen server included;
// - duplicates are bounded: what a worker sends again is only what no
//   worker had recorded when the previous one ended.

const PER_TRANSACTION = 250;
const TRANSACTIONS = 100;
const PACE_MS = 25;
const OUTAGE_MS = 5_000;

interface Ended {
  message: string;
  /** The recorded GTID sequence when the worker had ended, and the topic's partition ends then. */
  recorded: number;
  ends: bigint[];
}

describeWithKafka('MariaDB source across restarts of its server', () => {
  let supervising = true;
  // Declared before the fixture's, so run before it (in declaration order):
  // the supervisor starts no worker once the fixture stops them.
  afterAll(() => {
    supervising = false;
  });
  const f = mariadbStreamFixture('restart', { partitions: 3, privateServer: true });

  it('loses no row when the server is shut down or killed mid-stream', async () => {
    const s = f.server;
    const { database, admin } = f.source;
    let conn: mysql.Connection = f.source.conn;
    const config = f.config();

    // The runtime: whenever the worker ends, what it said is kept and another is started a second later.
    const ended: Ended[] = [];
    const supervise = async (): Promise<void> => {
      while (supervising) {
        const w = await f.start(config);
        await w.exited;
        if (!supervising) return;
        const recorded = await f.recordedSequence();
        ended.push({
          message: w.terminationMessage() ?? w.output().slice(-500),
          recorded,
          ends: await partitionEnds(admin, f.topic),
        });
        await new Promise((r) => setTimeout(r, 1_000));
      }
    };
    const supervisor = supervise();
    await f.untilRecorded('0-0-0', () => undefined);

    // The writer: each transaction committed once, whatever the outages.
    let written = 0;
    const outagesAt: number[] = [];
    // The writer holds its last transactions until the last outage began, so
    // every outage falls while rows are being written, however slow the machine.
    const HELD_BACK = 5;
    let lastOutageBegan!: () => void;
    const lastOutage = new Promise<void>((r) => (lastOutageBegan = r));
    const reconnect = async () => {
      await conn.end().catch(() => undefined);
      for (;;) {
        try {
          conn = await mariadbConnection(database, s.url);
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 250));
        }
      }
    };
    const committed = async (id: number) => {
      const [found] = await conn.query('select count(*) as n from numbered where id = ?', [id]);
      return Number((found as { n: number | string }[])[0]?.n) > 0;
    };
    const inserted = (async () => {
      for (let t = 0; t < TRANSACTIONS; t++) {
        if (t === TRANSACTIONS - HELD_BACK) await lastOutage;
        const first = t * PER_TRANSACTION + 1;
        const rows = Array.from({ length: PER_TRANSACTION }, (_, i) => numberedRow(first + i, 0));
        for (;;) {
          try {
            await writeMariadbTransaction(conn, { inserts: rows });
            written = t + 1;
            break;
          } catch {
            // The server went away: once it answers, the transaction is written again unless it committed.
            await reconnect();
            if (await committed(first)) {
              written = t + 1;
              break;
            }
          }
        }
        await new Promise((r) => setTimeout(r, PACE_MS));
      }
    })();
    inserted.catch(() => undefined);

    // Each outage once the worker put more rows on the broker.
    for (const [kind, atEvents] of [
      ['stop', 2_000],
      ['kill', 7_000],
      ['freeze', 12_000],
    ] as const) {
      await eventually(
        () => topicSize(admin, f.topic),
        (n) => n >= atEvents,
        120_000,
        50,
      );
      outagesAt.push(written);
      if (kind === 'freeze') {
        // A server that hangs (or a host gone silent) closes nothing: the worker must notice the silence.
        const before = ended.length;
        s.freeze();
        lastOutageBegan();
        await eventually(
          async () => ended.slice(before).some((e) => e.message.includes('sent nothing for')),
          (said) => said,
          90_000,
          250,
        ).finally(() => s.thaw());
        continue;
      }
      if (kind === 'stop') await s.stop();
      else await s.kill();
      await new Promise((r) => setTimeout(r, OUTAGE_MS));
      await s.start();
    }
    await inserted;
    // Every outage fell while rows were being written.
    expect(outagesAt).toHaveLength(3);
    expect(Math.max(...outagesAt)).toBeLessThan(TRANSACTIONS);

    const [last] = await conn.query('select @@global.gtid_binlog_pos as p');
    const lastGtid = String((last as { p: string }[])[0]?.p);
    await f.untilRecorded(lastGtid, () => undefined, 180_000);
    supervising = false;
    await f.stopAll();
    await supervisor;

    const ROWS = TRANSACTIONS * PER_TRANSACTION;
    const all = await f.arrived();
    console.info(
      `${all.length} events for ${ROWS} rows; outages after ${outagesAt.join(' and ')} of ${TRANSACTIONS} transactions; ` +
        `${ended.length} worker ends:\n` +
        ended.map((e) => `  ${e.message.trim().split('\n').pop()}`).join('\n'),
    );

    // Every number, one by one, intact.
    expectEveryRowIntact(all, ROWS);

    // What the worker said while the server was down names the server, and is no stack trace.
    expect(ended.length).toBeGreaterThan(0);
    for (const e of ended) {
      expect(e.message).toContain(`MariaDB at 127.0.0.1:${s.port}`);
      expect(e.message).not.toMatch(/\n\s+at /);
    }

    // Duplicates bounded: nothing a worker had recorded when its predecessor ended was sent again.
    const positionOf = new Map(all.map((e) => [e.id, gtidSequence(e.position)]));
    for (const e of ended) {
      const resentRecorded = all.filter(
        (a) => a.offset >= (e.ends[a.partition] ?? 0n) && (positionOf.get(a.id) ?? Infinity) <= e.recorded,
      );
      expect(resentRecorded.slice(0, 10)).toEqual([]);
    }
  });
});
