import { expect, it } from '@jest/globals';
import { describeWithKafka } from '@sluice/testing/kafka';
import { exitedEarly, readTopic, stopWorker, topicSize } from '@sluice/testing/kafka-helpers';
import { arrivedEvents, untilConfirmed, writeTransaction } from './numbered-rows.js';
import { numberedStreamFixture } from './numbered-stream.js';
import { compareHistories, INTEGRITY_WORKLOAD, numberedWorkload } from './key-histories.js';

// The PostgreSQL source under load, end to end: 100,000 changes of numbered
// rows (inserts, updates and deletes, in transactions of 1,000) committed to a
// captured table on the real server while the built worker program streams
// them to the real broker. Each change is read back and checked against what
// was written, by a checksum of the row's values.
//
// What is guaranteed, and so checked: every change arrives exactly once on a
// run without failures, with the row's content intact, and the changes of one
// row (one key: one partition) arrive in commit order. Across keys nothing is
// promised (the topic has 3 partitions, numbered-stream.ts).

describeWithKafka('PostgreSQL source: 100,000 changes through the worker program, checked one by one', () => {
  const f = numberedStreamFixture('integrity');

  it('delivers every change once, intact, in commit order per key', async () => {
    const { db, admin } = f.source;
    const w = await f.startReady(f.config());
    const failure = () => exitedEarly(w, 'the source worker');

    // The changes, and what each key's history must be.
    const { transactions, expected, changes } = numberedWorkload(INTEGRITY_WORKLOAD);
    let lastCommit = 0n;
    const started = Date.now();
    for (const tx of transactions) lastCommit = (await writeTransaction(db.client, tx)).after;
    const inserted = Date.now();
    expect(changes).toBe(100_000);

    // Everything acknowledged means everything published (the source acknowledges only after the broker did).
    await untilConfirmed(db.client, f.slot, lastCommit, failure);
    const published = Date.now();
    await stopWorker(w);
    const seconds = (published - started) / 1000;
    console.info(
      `${changes} changes committed in ${(inserted - started) / 1000} s; all published and acknowledged ` +
        `${seconds} s after the first commit: ${Math.round(changes / seconds)} events/s end to end`,
    );

    expect(await topicSize(admin, f.topic)).toBe(changes);
    const events = arrivedEvents(await readTopic(f.brokers, admin, f.topic, 60_000));
    expect(compareHistories(expected, events)).toEqual({
      missing: [],
      duplicated: [],
      wrong: [],
      outOfOrder: [],
    });
    expect(events).toHaveLength(changes);
  });
});
