import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { cdcNames } from '@sluice/shared/connectors';
import {
  exitedEarly,
  readTopic,
  startWorker,
  stopWorker,
  topicSize,
  waitReady,
  type RunningWorker,
} from '@sluice/testing/kafka-helpers';
import {
  arrivedEvents,
  numberedRow,
  numberedSource,
  numberedSourceConfig,
  rowChecksum,
  untilConfirmed,
  writeTransaction,
  type ArrivedEvent,
  type NumberedSource,
} from './numbered-rows.js';

// The PostgreSQL source under load, end to end: 100,000 changes of numbered
// rows (inserts, updates and deletes, in transactions of 1,000) committed to a
// captured table on the real server while the built worker program streams
// them to the real broker. Each change is read back and checked against what
// was written, by a checksum of the row's values.
//
// What is guaranteed, and so checked: every change arrives exactly once on a
// run without failures, with the row's content intact, and the changes of one
// row (one key: one partition) arrive in commit order. Across keys nothing is
// promised (the topic has 3 partitions).

const TRANSACTIONS = 100;
const PER_TRANSACTION = 1_000;
/** Rows 1..UPDATED are updated in every transaction after the first: long per-key histories. */
const UPDATED = 200;
const DELETES_PER_TRANSACTION = 10;
const PARTITIONS = 3;

interface Expected {
  op: string;
  version: number;
  checksum: string;
}

describeWithKafka('PostgreSQL source: 100,000 changes through the worker program, checked one by one', () => {
  const run = randomUUID().slice(0, 8);
  const brokers = testKafkaBrokers() ?? [];
  const connectorId = `src_integrity_${run}`;
  const topic = `sluice.integrity-${run}`;
  let source: NumberedSource | undefined;
  let worker: RunningWorker | undefined;

  beforeAll(async () => {
    source = await numberedSource('cdc_integrity', brokers, topic, PARTITIONS);
  });
  afterAll(async () => {
    if (worker) await stopWorker(worker);
    await source?.close();
  });

  it('delivers every change once, intact, in commit order per key', async () => {
    const { db, admin } = source!;
    const config = numberedSourceConfig(connectorId, db, topic, run);
    const w = await startWorker(config, { SLUICE_STREAM_BROKERS: brokers.join(',') });
    worker = w;
    await waitReady(w);
    const failure = () => exitedEarly(w, 'the source worker');

    // The changes, and what each key's history must be.
    const expected = new Map<number, Expected[]>();
    const expect_ = (id: number, op: string, version: number, checksum: string) =>
      expected.set(id, [...(expected.get(id) ?? []), { op, version, checksum }]);
    let nextId = 1;
    let previousInserts: number[] = [];
    let changes = 0;
    let lastCommit = 0n;
    const started = Date.now();
    for (let t = 0; t < TRANSACTIONS; t++) {
      const updates = t === 0 ? [] : Array.from({ length: UPDATED }, (_, i) => numberedRow(i + 1, t));
      // Rows of the previous transaction past the updated ones: deleted once, never touched again.
      const deletes = t === 0 ? [] : previousInserts.slice(500, 500 + DELETES_PER_TRANSACTION);
      const inserts = Array.from({ length: PER_TRANSACTION - updates.length - deletes.length }, () =>
        numberedRow(nextId++, 0),
      );
      for (const r of inserts) expect_(r.id, 'c', 0, rowChecksum({ ...r }));
      for (const r of updates) expect_(r.id, 'u', r.version, rowChecksum({ ...r }));
      for (const id of deletes) expect_(id, 'd', -1, rowChecksum(null, id));
      lastCommit = (await writeTransaction(db.client, { inserts, updates, deletes })).after;
      changes += inserts.length + updates.length + deletes.length;
      previousInserts = inserts.map((r) => r.id);
    }
    const inserted = Date.now();
    expect(changes).toBe(TRANSACTIONS * PER_TRANSACTION);

    // Everything acknowledged means everything published (the source acknowledges only after the broker did).
    const { slot } = cdcNames(connectorId);
    await untilConfirmed(db.client, slot, lastCommit, failure);
    const published = Date.now();
    await stopWorker(w);
    const seconds = (published - started) / 1000;
    console.info(
      `${changes} changes committed in ${(inserted - started) / 1000} s; all published and acknowledged ` +
        `${seconds} s after the first commit: ${Math.round(changes / seconds)} events/s end to end`,
    );

    expect(await topicSize(admin, topic)).toBe(changes);
    const events = arrivedEvents(await readTopic(brokers, admin, topic, 60_000));
    expect(compare(expected, events)).toEqual({ missing: [], duplicated: [], wrong: [], outOfOrder: [] });
    expect(events).toHaveLength(changes);
  });
});

/** Each key's arrivals against its expected history; up to 5 examples of each kind of fault. */
function compare(expected: Map<number, Expected[]>, events: readonly ArrivedEvent[]) {
  const arrived = new Map<number, ArrivedEvent[]>();
  const ordered = [...events].sort((a, b) =>
    a.partition !== b.partition ? a.partition - b.partition : a.offset < b.offset ? -1 : 1,
  );
  for (const e of ordered) arrived.set(e.id, [...(arrived.get(e.id) ?? []), e]);
  const faults = {
    missing: [] as string[],
    duplicated: [] as string[],
    wrong: [] as string[],
    outOfOrder: [] as string[],
  };
  const note = (list: string[], text: string) => void (list.length < 5 && list.push(text));
  const counts = { missing: 0, duplicated: 0, wrong: 0, outOfOrder: 0 };
  for (const id of new Set([...expected.keys(), ...arrived.keys()])) {
    const want = expected.get(id) ?? [];
    const got = arrived.get(id) ?? [];
    const seen = new Map<string, number>();
    let lastIndex = -1;
    for (const e of got) {
      const label = `${e.op}:${e.version}`;
      const index = want.findIndex((w) => `${w.op}:${w.version}` === label);
      const times = (seen.get(label) ?? 0) + 1;
      seen.set(label, times);
      if (index < 0 || want[index]?.checksum !== e.checksum) {
        counts.wrong++;
        note(faults.wrong, `row ${id} ${label} at ${e.partition}/${e.offset} (position ${e.position})`);
      } else if (times > 1) {
        counts.duplicated++;
        note(faults.duplicated, `row ${id} ${label} at ${e.partition}/${e.offset}`);
      } else {
        if (index < lastIndex) {
          counts.outOfOrder++;
          note(
            faults.outOfOrder,
            `row ${id} ${label} after ${want[lastIndex]?.op}:${want[lastIndex]?.version}`,
          );
        }
        lastIndex = Math.max(lastIndex, index);
      }
    }
    for (const w of want) {
      if (!seen.has(`${w.op}:${w.version}`)) {
        counts.missing++;
        note(faults.missing, `row ${id} ${w.op}:${w.version}`);
      }
    }
  }
  const summary = (kind: keyof typeof counts) =>
    counts[kind] === 0 ? [] : [`${counts[kind]} in all, e.g.`, ...faults[kind]];
  return {
    missing: summary('missing'),
    duplicated: summary('duplicated'),
    wrong: summary('wrong'),
    outOfOrder: summary('outOfOrder'),
  };
}
