import { beforeAll, expect, it } from '@jest/globals';
import { describeWithKafka } from '@sluice/testing/kafka';
import { exitedEarly, stopWorker, waitReady } from '@sluice/testing/kafka-helpers';
import { numberedRow, rowChecksum, type NumberedRow } from './numbered-rows.js';
import { writeMariadbTransaction } from './mariadb-numbered.js';
import { mariadbStreamFixture } from './mariadb-stream.js';

// The MariaDB source's handover from the initial snapshot to the binary
// log while the table is written to: 50,000 rows are there when the worker
// starts, and from then on transactions update rows read by the snapshot
// and insert new ones, through the snapshot and after it. The snapshot is
// consistent with the log position the stream starts from, so:
// - a row there at the snapshot's point arrives once as a read (`r`), with
//   the version it had at that point, then each later update once;
// - a row inserted after that point arrives as an insert (`c`), never as a read;
// - per row, the versions arrive in order with none skipped, ending at the
//   version the table holds (checksums of each version's content).

const PREFILLED = 50_000;
const UPDATES_PER_TRANSACTION = 20;
const INSERTS_PER_TRANSACTION = 20;

describeWithKafka('MariaDB source: snapshot then stream, with writes throughout', () => {
  const f = mariadbStreamFixture('handover', { partitions: 3 });

  beforeAll(async () => {
    for (let from = 0; from < PREFILLED; from += 5_000) {
      const rows = Array.from({ length: 5_000 }, (_, i) => numberedRow(from + i + 1, 0));
      await writeMariadbTransaction(f.source.conn, { inserts: rows });
    }
  });

  it('misses nothing and doubles nothing between the snapshot and the stream', async () => {
    const { conn } = f.source;
    const versions = new Map<number, NumberedRow>();
    let nextId = PREFILLED + 1;
    let t = 0;
    const w = await f.start(f.config());
    const failure = () => exitedEarly(w, 'the source worker');
    // Writes from the worker's start until a while after its snapshot was recorded.
    let snapshotRecordedAt = 0;
    let during = 0;
    let lastGtid = '';
    while (snapshotRecordedAt === 0 || Date.now() - snapshotRecordedAt < 2_000) {
      t += 1;
      const updates = Array.from({ length: UPDATES_PER_TRANSACTION }, (_, i) => {
        const id = ((t * 7919 + i * 104729) % PREFILLED) + 1;
        return numberedRow(id, (versions.get(id)?.version ?? 0) + 1);
      });
      const unique = [...new Map(updates.map((r) => [r.id, r])).values()];
      const inserts = Array.from({ length: INSERTS_PER_TRANSACTION }, () => numberedRow(nextId++, 0));
      lastGtid = await writeMariadbTransaction(conn, { inserts, updates: unique });
      for (const r of [...unique, ...inserts]) versions.set(r.id, r);
      if (snapshotRecordedAt === 0) {
        during += 1;
        if (failure()) throw new Error(failure());
        if (t % 10 === 0 && (await f.recorded())) snapshotRecordedAt = Date.now();
      }
    }
    await waitReady(w);
    await f.untilRecorded(lastGtid, failure);
    await stopWorker(w);
    const events = await f.arrived();
    console.info(
      `${t} transactions written, ${during} of them before the snapshot was recorded; ${events.length} events`,
    );
    expect(during).toBeGreaterThan(5);

    const byId = new Map<number, typeof events>();
    const ordered = [...events].sort((a, b) =>
      a.partition !== b.partition ? a.partition - b.partition : a.offset < b.offset ? -1 : 1,
    );
    for (const e of ordered) byId.set(e.id, [...(byId.get(e.id) ?? []), e]);
    const faults: string[] = [];
    const fault = (text: string) => void (faults.length < 10 && faults.push(text));
    const lastId = nextId - 1;
    let readThenStreamed = 0;
    let insertedAfterSnapshot = 0;
    for (let id = 1; id <= lastId; id++) {
      const got = byId.get(id) ?? [];
      const reads = got.filter((e) => e.op === 'r');
      // Read by the snapshot (once, first), or inserted after its point and streamed from the insert on.
      if (reads.length > 1) fault(`row ${id}: ${reads.length} snapshot reads`);
      if (reads.length === 1 && got[0]?.op !== 'r') fault(`row ${id}: streamed before its snapshot read`);
      if (reads.length === 0 && (id <= PREFILLED || got[0]?.op !== 'c')) {
        fault(`row ${id}: no snapshot read, first event ${got[0]?.op ?? 'none'}`);
      }
      if (reads.length === 1 && got.length > 1) readThenStreamed += 1;
      if (reads.length === 0 && got.length > 0) insertedAfterSnapshot += 1;
      // Versions in order, none skipped, none twice, each with its content.
      let expected = got[0]?.version ?? -1;
      for (const e of got) {
        if (e.version !== expected) fault(`row ${id}: version ${e.version} where ${expected} was due`);
        if (e.checksum !== rowChecksum({ ...numberedRow(id, e.version) }))
          fault(`row ${id} v${e.version} altered`);
        expected = e.version + 1;
      }
      const final = versions.get(id)?.version ?? 0;
      if (got.at(-1)?.version !== final)
        fault(`row ${id}: ends at ${got.at(-1)?.version}, the table has ${final}`);
    }
    expect(faults).toEqual([]);
    // The handover happened under writes: rows read by the snapshot were updated after its point,
    // and rows were inserted after it.
    expect(readThenStreamed).toBeGreaterThan(0);
    expect(insertedAfterSnapshot).toBeGreaterThan(0);
  });
});
