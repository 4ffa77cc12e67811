import { expect } from '@jest/globals';
import type { WorkerConfig } from '@sluice/shared/catalog';
import {
  eventually,
  exitedEarly,
  readTopic,
  stopWorker,
  topicSize,
  type RunningWorker,
} from '@sluice/testing/kafka-helpers';
import {
  arrivedEvents,
  lostOrAltered,
  numberedRow,
  untilConfirmed,
  writeTransaction,
  type ArrivedEvent,
} from './numbered-rows.js';
import type { NumberedStreamFixture } from './numbered-stream.js';

// What the PostgreSQL source tests that interrupt a worker's path in the
// middle of a stream share: numbered rows inserted in transactions while the
// worker streams them, the interruption once enough is on the broker while
// the inserts go on (the last transactions wait for it, so it lands
// mid-stream), a restarted worker catching up to the last commit, and the
// check that every row arrived intact.

/** The stream: 20,000 rows in transactions of 500, interrupted at 4,000 events, 10 transactions after it. */
export const INTERRUPTED_STREAM = {
  rows: 20_000,
  perTransaction: 500,
  transactions: 40,
  atEvents: 4_000,
  afterInterruption: 10,
} as const;

/** The WAL bounds of one committed transaction (writeTransaction). */
export type CommitBounds = { before: bigint; after: bigint };

/** What an interrupted stream leaves to check once the restarted worker caught up. */
export interface InterruptedStreamResult {
  /** Each transaction's WAL bounds, in commit order. */
  bounds: CommitBounds[];
  /** Rows committed when the interruption came. */
  committedAtInterruption: number;
  /** Every event on the topic at the end. */
  all: ArrivedEvent[];
}

/**
 * Streams the numbered rows through a worker started with `config`,
 * interrupts it, and has a restarted worker catch up:
 * - starts the first worker, then inserts the rows while it streams them;
 * - once `atEvents` events are on the broker and `ready` (polled with them;
 *   always, unless given) holds, records the rows committed and calls
 *   `interrupt` with the first worker; the last `afterInterruption`
 *   transactions are inserted only after it;
 * - calls `whileDown` (the first worker interrupted, the last transactions
 *   perhaps still being inserted), then waits for the inserts to end;
 * - starts the worker again, waits until the slot confirmed the last commit,
 *   stops it and reads back every event on the topic.
 */
export async function interruptedStream(
  f: NumberedStreamFixture,
  steps: {
    config: WorkerConfig;
    ready?: (bounds: readonly CommitBounds[]) => Promise<boolean>;
    interrupt: (first: RunningWorker) => Promise<void>;
    whileDown: (first: RunningWorker) => Promise<void>;
  },
): Promise<InterruptedStreamResult> {
  const { perTransaction, transactions, atEvents, afterInterruption } = INTERRUPTED_STREAM;
  const { db, admin } = f.source;
  const first = await f.startReady(steps.config);

  const bounds: CommitBounds[] = [];
  let committedAtInterruption = 0;
  const interrupted = (async () => {
    await eventually(
      async () => {
        const failure = exitedEarly(first, 'the source worker');
        if (failure) throw new Error(failure);
        return { events: await topicSize(admin, f.topic), ready: (await steps.ready?.(bounds)) ?? true };
      },
      (n) => n.events >= atEvents && n.ready,
      90_000,
      20,
    );
    committedAtInterruption = bounds.length * perTransaction;
    await steps.interrupt(first);
  })();
  const inserted = (async () => {
    for (let t = 0; t < transactions; t++) {
      if (t === transactions - afterInterruption) await interrupted;
      const rows = Array.from({ length: perTransaction }, (_, i) =>
        numberedRow(t * perTransaction + i + 1, 0),
      );
      bounds.push(await writeTransaction(db.client, { inserts: rows }));
    }
  })();
  // Awaited below; a failure before (the worker dying) must not also surface as unhandled.
  inserted.catch(() => undefined);
  await interrupted;
  await steps.whileDown(first);
  await inserted;

  const second = await f.startReady(steps.config);
  await untilConfirmed(f.monitor, f.slot, bounds[bounds.length - 1]?.after ?? 0n, () =>
    exitedEarly(second, 'the restarted source worker'),
  );
  await stopWorker(second);
  const all = arrivedEvents(await readTopic(f.brokers, admin, f.topic));
  return { bounds, committedAtInterruption, all };
}

/**
 * Nothing lost, nothing altered: every numbered row up to `rows` arrived, as
 * an insert of its content (the MariaDB kill and restart tests check theirs so too).
 */
export function expectEveryRowIntact(
  all: readonly ArrivedEvent[],
  rows: number = INTERRUPTED_STREAM.rows,
): void {
  const { missing, wrong } = lostOrAltered(all, rows);
  expect({ missing: missing.slice(0, 10), wrong: wrong.slice(0, 10) }).toEqual({ missing: [], wrong: [] });
  expect(missing).toHaveLength(0);
  expect(wrong).toHaveLength(0);
}
