import { expect, it } from '@jest/globals';
import { describeWithKafka } from '@sluice/testing/kafka';
import { exitedEarly, stopWorker, topicSize } from '@sluice/testing/kafka-helpers';
import { compareHistories, INTEGRITY_WORKLOAD, numberedWorkload } from './key-histories.js';
import { writeMariadbTransaction } from './mariadb-numbered.js';
import { mariadbStreamFixture } from './mariadb-stream.js';

// The MariaDB source under load, end to end: 100,000 changes of numbered
// rows (inserts, updates and deletes, in transactions of 1,000) committed on
// the real server while the built worker program streams its binary log to
// the real broker. Each change is read back and checked against what was
// written, by a checksum of the row's values: every change arrives exactly
// once on a run without failures, intact, and one row's changes (one key:
// one partition) arrive in commit order.

const PARTITIONS = 3;

describeWithKafka('MariaDB source: 100,000 changes through the worker program, checked one by one', () => {
  const f = mariadbStreamFixture('integrity', { partitions: PARTITIONS });

  it('delivers every change once, intact, in commit order per key', async () => {
    const { conn, admin } = f.source;
    const w = await f.startReady(f.config());
    const failure = () => exitedEarly(w, 'the source worker');
    // The (empty) snapshot is recorded before the stream starts.
    await f.untilRecorded('0-0-0', failure);

    const { transactions, expected, changes } = numberedWorkload(INTEGRITY_WORKLOAD);
    let lastGtid = '';
    const started = Date.now();
    for (const tx of transactions) lastGtid = await writeMariadbTransaction(conn, tx);
    const inserted = Date.now();
    expect(changes).toBe(100_000);

    // A recorded position means everything before it was acknowledged by the broker.
    await f.untilRecorded(lastGtid, failure);
    const published = Date.now();
    await stopWorker(w);
    const seconds = (published - started) / 1000;
    console.info(
      `${changes} changes committed in ${(inserted - started) / 1000} s; all published and recorded ` +
        `${seconds} s after the first commit: ${Math.round(changes / seconds)} events/s end to end`,
    );

    expect(await topicSize(admin, f.topic)).toBe(changes);
    const events = await f.arrived();
    expect(compareHistories(expected, events)).toEqual({
      missing: [],
      duplicated: [],
      wrong: [],
      outOfOrder: [],
    });
    expect(events).toHaveLength(changes);
  });
});
