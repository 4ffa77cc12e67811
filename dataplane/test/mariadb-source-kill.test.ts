import { expect, it } from '@jest/globals';
import { describeWithKafka } from '@sluice/testing/kafka';
import { eventually, exitedEarly, stopWorker, type RunningWorker } from '@sluice/testing/kafka-helpers';
import { numberedRow } from './numbered-rows.js';
import { gtidSequence, partitionEnds, writeMariadbTransaction } from './mariadb-numbered.js';
import { expectKillsBounded, mariadbStreamFixture, type StreamKill } from './mariadb-stream.js';
import { expectEveryRowIntact } from './interrupted-stream.js';

// The MariaDB source killed with SIGKILL ten times in the middle of a
// stream, each time started again at once, as Kubernetes or the process
// runtime restarts a worker: numbered rows inserted in transactions of 250
// while the kills land (at least 30,000; the writes go on until the tenth
// kill, however long restarts take).
//
// What is guaranteed, and so checked:
// - nothing is lost: every row arrives, its content intact (checksum);
// - a recorded position is published: every transaction at or before the
//   position a killed worker had recorded is on the broker whole;
// - at-least-once: a restarted worker resends only transactions after the
//   recorded position, so a duplicate is always of a transaction no worker
//   had recorded when it was killed.

const PER_TRANSACTION = 250;
/** At least this many transactions, and more while kills remain; at most MAX_TRANSACTIONS. */
const TRANSACTIONS = 120;
const MAX_TRANSACTIONS = 600;
const KILLS = 10;
/** Pause between transactions: the writes last through the kills. */
const PACE_MS = 120;

describeWithKafka('MariaDB source killed with SIGKILL ten times mid-stream', () => {
  const f = mariadbStreamFixture('kill', { partitions: 3 });

  it('loses nothing, and records no position it did not publish', async () => {
    const { conn, admin } = f.source;
    const config = f.config();
    const failureOf = (w: RunningWorker) => () => exitedEarly(w, 'the source worker');
    let worker = await f.startReady(config);
    // The snapshot (of the empty table) recorded: every later start streams.
    await f.untilRecorded('0-0-0', failureOf(worker));

    const gtids: number[] = [];
    let killing = true;
    const inserted = (async () => {
      for (let t = 0; t < MAX_TRANSACTIONS && (t < TRANSACTIONS || killing); t++) {
        const rows = Array.from({ length: PER_TRANSACTION }, (_, i) =>
          numberedRow(t * PER_TRANSACTION + i + 1, 0),
        );
        gtids.push(gtidSequence(await writeMariadbTransaction(conn, { inserts: rows })));
        await new Promise((r) => setTimeout(r, PACE_MS));
      }
    })();
    inserted.catch(() => undefined);

    // Each kill once the running worker recorded a position past the one it started from.
    const kills: (StreamKill & { committed: number })[] = [];
    for (let k = 0; k < KILLS; k++) {
      const from = await f.recordedSequence();
      const w = worker;
      await eventually(
        async () => {
          const failure = failureOf(w)();
          if (failure) throw new Error(failure);
          return f.recordedSequence();
        },
        (seq) => seq > from,
        60_000,
        50,
      );
      // A little later each time, so that kills land between a publish and its record too.
      await new Promise((r) => setTimeout(r, (k * 37) % 150));
      w.child.kill('SIGKILL');
      await w.exited;
      const committed = gtids.length;
      const recorded = await f.recordedSequence();
      kills.push({ recorded, ends: await partitionEnds(admin, f.topic), committed });
      worker = await f.startReady(config);
    }
    killing = false;
    await inserted;
    const ROWS = gtids.length * PER_TRANSACTION;
    // Every kill landed while rows were being written.
    expect(kills.at(-1)?.committed).toBeLessThan(gtids.length);
    await f.untilRecorded(`0-1-${gtids.at(-1)}`, failureOf(worker));
    await stopWorker(worker);
    const all = await f.arrived();
    console.info(
      `${KILLS} kills at ${kills.map((k) => k.committed).join(', ')} of ${gtids.length} transactions committed; ` +
        `${all.length} events for ${ROWS} rows`,
    );

    // Nothing lost, nothing altered.
    expectEveryRowIntact(all, ROWS);

    const transactionOf = (id: number) => gtids[Math.floor((id - 1) / PER_TRANSACTION)] ?? Infinity;
    // Recorded means published, and at-least-once: nothing recorded at a kill was sent again.
    expectKillsBounded(all, kills, ROWS, transactionOf);
  });
});
