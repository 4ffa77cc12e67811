import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import {
  exitedEarly,
  readTopic,
  startWorker,
  stopWorker,
  topicSize,
  waitReady,
  type RunningWorker,
} from '@sluice/testing/kafka-helpers';
import { arrivedEvents } from './numbered-rows.js';
import { compareHistories, INTEGRITY_WORKLOAD, numberedWorkload } from './key-histories.js';
import {
  mariadbSource,
  mariadbSourceConfig,
  untilRecorded,
  writeMariadbTransaction,
  type MariadbSource,
} from './mariadb-numbered.js';

// The MariaDB source under load, end to end: 100,000 changes of numbered
// rows (inserts, updates and deletes, in transactions of 1,000) committed on
// the real server while the built worker program streams its binary log to
// the real broker. Each change is read back and checked against what was
// written, by a checksum of the row's values: every change arrives exactly
// once on a run without failures, intact, and one row's changes (one key:
// one partition) arrive in commit order.

const PARTITIONS = 3;

describeWithKafka('MariaDB source: 100,000 changes through the worker program, checked one by one', () => {
  const run = randomUUID().slice(0, 8);
  const brokers = testKafkaBrokers() ?? [];
  const connectorId = `src_mariadb_integrity_${run}`;
  const topic = `sluice.mariadb-integrity-${run}`;
  let source: MariadbSource | undefined;
  let worker: RunningWorker | undefined;

  beforeAll(async () => {
    source = await mariadbSource('cdc_integrity', brokers, topic, PARTITIONS);
  });
  afterAll(async () => {
    if (worker) await stopWorker(worker);
    await source?.admin.deleteTopics({ topics: [`sluice-position.${connectorId}`] }).catch(() => undefined);
    await source?.close();
  });

  it('delivers every change once, intact, in commit order per key', async () => {
    const { database, conn, admin } = source!;
    const w = await startWorker(mariadbSourceConfig(connectorId, database, topic), {
      SLUICE_STREAM_BROKERS: brokers.join(','),
    });
    worker = w;
    await waitReady(w);
    const failure = () => exitedEarly(w, 'the source worker');
    // The (empty) snapshot is recorded before the stream starts.
    await untilRecorded(brokers, admin, connectorId, '0-0-0', failure);

    const { transactions, expected, changes } = numberedWorkload(INTEGRITY_WORKLOAD);
    let lastGtid = '';
    const started = Date.now();
    for (const tx of transactions) lastGtid = await writeMariadbTransaction(conn, tx);
    const inserted = Date.now();
    expect(changes).toBe(100_000);

    // A recorded position means everything before it was acknowledged by the broker.
    await untilRecorded(brokers, admin, connectorId, lastGtid, failure);
    const published = Date.now();
    await stopWorker(w);
    const seconds = (published - started) / 1000;
    console.info(
      `${changes} changes committed in ${(inserted - started) / 1000} s; all published and recorded ` +
        `${seconds} s after the first commit: ${Math.round(changes / seconds)} events/s end to end`,
    );

    expect(await topicSize(admin, topic)).toBe(changes);
    const events = arrivedEvents(await readTopic(brokers, admin, topic, 60_000));
    expect(compareHistories(expected, events)).toEqual({
      missing: [],
      duplicated: [],
      wrong: [],
      outOfOrder: [],
    });
    expect(events).toHaveLength(changes);
  });
});
