import { expect, it } from '@jest/globals';
import { describeWithKafka } from '@sluice/testing/kafka';
import { eventually, readTopic } from '@sluice/testing/kafka-helpers';
import { arrivedEvents, slotState, type ArrivedEvent } from './numbered-rows.js';
import { expectEveryRowIntact, interruptedStream, INTERRUPTED_STREAM } from './interrupted-stream.js';
import { numberedStreamFixture } from './numbered-stream.js';

// The PostgreSQL source killed with SIGKILL in the middle of a stream, then
// started again, as Kubernetes or the process runtime restarts a worker:
// 20,000 numbered rows inserted in transactions of 500, the worker killed
// once 4,000 events are on the broker while the inserts go on, the rest
// inserted while it is down and after it is back (interrupted-stream.ts).
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

const { rows: ROWS, perTransaction: PER_TRANSACTION, transactions: TRANSACTIONS } = INTERRUPTED_STREAM;

describeWithKafka('PostgreSQL source killed with SIGKILL mid-stream and started again', () => {
  const f = numberedStreamFixture('kill');

  it('loses nothing, and confirms no transaction it did not publish', async () => {
    const { monitor, slot } = f;
    let confirmed = 0n;
    let beforeRestart: ArrivedEvent[] = [];
    const {
      bounds,
      committedAtInterruption: committedAtKill,
      all,
    } = await interruptedStream(f, {
      config: f.config(),
      // The kill: once enough is on the broker and the slot confirmed some of
      // it (a busy source may confirm nothing for a while), while the inserter
      // goes on.
      ready: async (commits) => {
        const early = commits[1];
        const state = early ? await slotState(monitor, slot) : undefined;
        return !!state && state.confirmed >= (early?.after ?? 0n);
      },
      interrupt: async (first) => {
        first.child.kill('SIGKILL');
        await first.exited;
      },
      // What the dead worker left: the slot's confirmed position and the broker's content.
      whileDown: async () => {
        const state = await eventually(
          () => slotState(monitor, slot),
          (s) => s !== undefined && !s.active,
        );
        confirmed = (state as { confirmed: bigint }).confirmed;
        beforeRestart = arrivedEvents(await readTopic(f.brokers, f.source.admin, f.topic));
      },
    });
    const ends = new Map<number, bigint>();
    for (const e of beforeRestart)
      if (e.offset >= (ends.get(e.partition) ?? 0n)) ends.set(e.partition, e.offset + 1n);

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
    expectEveryRowIntact(all);

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
