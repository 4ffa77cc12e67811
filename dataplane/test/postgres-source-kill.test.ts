import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { cdcNames } from '@sluice/shared/connectors';
import {
  eventually,
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
  lostOrAltered,
  numberedRow,
  numberedSource,
  numberedSourceConfig,
  slotState,
  untilConfirmed,
  writeTransaction,
  type NumberedSource,
} from './numbered-rows.js';

// The PostgreSQL source killed with SIGKILL in the middle of a stream, then
// started again, as Kubernetes or the process runtime restarts a worker:
// 20,000 numbered rows inserted in transactions of 500, the worker killed
// once 4,000 events are on the broker while the inserts go on, the rest
// inserted while it is down and after it is back.
//
// What is guaranteed, and so checked:
// - nothing is lost: every row arrives, its content intact (checksum);
// - the slot never confirms a transaction whose events are not all on the
//   broker: the source acknowledges a commit only after the broker
//   acknowledged the publication of its events. The slot skips, on resume,
//   the transactions whose commit lies at or before its confirmed position
//   (confirmed_flush_lsn), so that is the bound checked, per transaction: a
//   change's own position may lie before a position confirmed while its
//   transaction was still open (an idle source confirms the server's sent
//   position), and that transaction is still streamed after the restart;
// - at-least-once: after the restart, only what was not confirmed is sent
//   again, so duplicates are only of transactions the slot had not confirmed.

const ROWS = 20_000;
const PER_TRANSACTION = 500;
const TRANSACTIONS = ROWS / PER_TRANSACTION;
/** The inserter waits for the kill before these last transactions: the kill lands while rows are being inserted. */
const AFTER_KILL = 10;
const KILL_AT_EVENTS = 4_000;

describeWithKafka('PostgreSQL source killed with SIGKILL mid-stream and started again', () => {
  const run = randomUUID().slice(0, 8);
  const brokers = testKafkaBrokers() ?? [];
  const connectorId = `src_kill_${run}`;
  const topic = `sluice.kill-${run}`;
  const { slot } = cdcNames(connectorId);
  let source: NumberedSource | undefined;
  /** Reads the slot while the test's inserts run on the scratch database's own client. */
  let monitor: pg.Client;
  const workers: RunningWorker[] = [];

  beforeAll(async () => {
    source = await numberedSource('cdc_kill', brokers, topic, 3);
    monitor = new pg.Client({ ...source.db.settings, ssl: false });
    await monitor.connect();
  });
  afterAll(async () => {
    for (const w of workers) await stopWorker(w);
    await monitor?.end();
    await source?.close();
  });

  it('loses nothing, and confirms no transaction it did not publish', async () => {
    const { db, admin } = source!;
    const config = numberedSourceConfig(connectorId, db, topic, run);
    const env = { SLUICE_STREAM_BROKERS: brokers.join(',') };
    const failureOf = (w: RunningWorker) => () => exitedEarly(w, 'the source worker');
    const first = await startWorker(config, env);
    workers.push(first);
    await waitReady(first);

    // The kill: once enough is on the broker and the slot confirmed some of
    // it (a busy source may confirm nothing for a while), while the inserter
    // goes on.
    const bounds: { before: bigint; after: bigint }[] = [];
    let committedAtKill = 0;
    const killed = (async () => {
      await eventually(
        async () => {
          const failure = failureOf(first)();
          if (failure) throw new Error(failure);
          const early = bounds[1];
          const state = early ? await slotState(monitor, slot) : undefined;
          return {
            events: await topicSize(admin, topic),
            confirmedSome: !!state && state.confirmed >= (early?.after ?? 0n),
          };
        },
        (n) => n.events >= KILL_AT_EVENTS && n.confirmedSome,
        90_000,
        20,
      );
      first.child.kill('SIGKILL');
      committedAtKill = bounds.length * PER_TRANSACTION;
      await first.exited;
    })();
    const inserted = (async () => {
      for (let t = 0; t < TRANSACTIONS; t++) {
        if (t === TRANSACTIONS - AFTER_KILL) await killed;
        const rows = Array.from({ length: PER_TRANSACTION }, (_, i) =>
          numberedRow(t * PER_TRANSACTION + i + 1, 0),
        );
        bounds.push(await writeTransaction(db.client, { inserts: rows }));
      }
    })();
    // Awaited below; a failure before (the worker dying) must not also surface as unhandled.
    inserted.catch(() => undefined);
    await killed;

    // What the dead worker left: the slot's confirmed position and the broker's content.
    const state = await eventually(
      () => slotState(monitor, slot),
      (s) => s !== undefined && !s.active,
    );
    const confirmed = (state as { confirmed: bigint }).confirmed;
    const beforeRestart = arrivedEvents(await readTopic(brokers, admin, topic));
    await inserted;
    const ends = new Map<number, bigint>();
    for (const e of beforeRestart)
      if (e.offset >= (ends.get(e.partition) ?? 0n)) ends.set(e.partition, e.offset + 1n);

    const second = await startWorker(config, env);
    workers.push(second);
    await waitReady(second);
    await untilConfirmed(monitor, slot, bounds[bounds.length - 1]?.after ?? 0n, failureOf(second));
    await stopWorker(second);
    const all = arrivedEvents(await readTopic(brokers, admin, topic));

    // A transaction is surely confirmed when its commit ended before the confirmed position.
    const transactionOf = (id: number) => Math.floor((id - 1) / PER_TRANSACTION);
    const surelyConfirmed = (id: number) => {
      const commit = bounds[transactionOf(id)];
      return commit !== undefined && commit.after <= confirmed;
    };
    const confirmedTransactions = bounds.filter((b) => b.after <= confirmed).length;
    console.info(
      `killed with ${committedAtKill} rows committed and ${beforeRestart.length} events on the broker; ` +
        `${confirmedTransactions} of ${TRANSACTIONS} transactions confirmed; ${all.length} events in all`,
    );
    expect(committedAtKill).toBeLessThan(ROWS);
    expect(confirmedTransactions).toBeGreaterThan(0);
    expect(confirmedTransactions).toBeLessThan(TRANSACTIONS);

    // Nothing lost, nothing altered.
    const copies = new Map<number, number>();
    for (const e of all) copies.set(e.id, (copies.get(e.id) ?? 0) + 1);
    const { missing, wrong } = lostOrAltered(all, ROWS);
    expect({ missing: missing.slice(0, 10), wrong: wrong.slice(0, 10) }).toEqual({ missing: [], wrong: [] });
    expect(missing).toHaveLength(0);
    expect(wrong).toHaveLength(0);

    // Confirmed means published: every row of a confirmed transaction was on the broker before the restart.
    const publishedBeforeKill = new Set(beforeRestart.map((e) => e.id));
    const confirmedNotPublished = Array.from({ length: ROWS }, (_, i) => i + 1).filter(
      (id) => surelyConfirmed(id) && !publishedBeforeKill.has(id),
    );
    expect(confirmedNotPublished.slice(0, 10)).toEqual([]);

    // At-least-once: the restarted worker sent again only what was not confirmed.
    const resentConfirmed = all.filter(
      (e) => e.offset >= (ends.get(e.partition) ?? 0n) && surelyConfirmed(e.id),
    );
    expect(resentConfirmed.slice(0, 10)).toEqual([]);
    const duplicatedConfirmed = [...copies].filter(([id, n]) => n > 1 && surelyConfirmed(id));
    expect(duplicatedConfirmed.slice(0, 10)).toEqual([]);
  });
});
