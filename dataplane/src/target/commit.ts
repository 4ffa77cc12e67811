import type { WorkerContext } from '../engine.js';
import { describeKafkaFailure } from '../systems/kafka/errors.js';
import type { RawMessage } from './consumer-group.js';

/** How long a commit may stay unanswered before it is asked for again, and how often at most. */
export const COMMIT_NUDGE_MS = 2_000;
const COMMIT_NUDGES = 15;

/**
 * Commits, per partition, the offset after the last message of the batch,
 * through the stream's own commit (it merges what is queued, and waits out a
 * group rejoin instead of starting one). The consumer's own `commit` (one
 * request for every partition) rejoins by itself; with it, one test run under
 * load saw a batch's commit stay unanswered for 30 s, which stalls the loop.
 *
 * The stream leaves a commit queued while its consumer is not active (a
 * group rejoin) and flushes it once the rejoin completes; a flush that still
 * finds the consumer inactive leaves it queued with nothing to trigger it
 * again (seen as a pipeline whose rows arrived and whose offsets were never
 * committed). So an unanswered commit is asked for again every
 * COMMIT_NUDGE_MS: the same offsets, merged with the queued ones, flushed as
 * soon as the consumer is active. After COMMIT_NUDGES it counts as failed:
 * not fatal (at-least-once), the next batch's commit covers these offsets.
 */
export async function commit(
  batch: readonly Pick<RawMessage, 'topic' | 'partition' | 'commit'>[],
  ctx: Pick<WorkerContext, 'log'>,
  nudgeMs = COMMIT_NUDGE_MS,
): Promise<boolean> {
  const last = new Map<string, Pick<RawMessage, 'commit'>>();
  for (const msg of batch) last.set(`${msg.topic}\0${msg.partition}`, msg);
  const ask = () => Promise.all([...last.values()].map((msg) => msg.commit())).then(() => true);
  try {
    let answered = ask();
    for (let nudge = 0; nudge <= COMMIT_NUDGES; nudge++) {
      let timer: NodeJS.Timeout | undefined;
      const waited = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), nudgeMs);
      });
      const done = await Promise.race([answered, waited]).finally(() => clearTimeout(timer));
      if (done) return true;
      answered = Promise.race([answered, ask()]);
    }
    answered.catch(() => undefined);
    ctx.log('warn', 'committing offsets failed', {
      reason: `no answer in ${Math.round((nudgeMs * (COMMIT_NUDGES + 1)) / 1000)} s`,
    });
  } catch (e) {
    // Not fatal: these messages come again after a restart or rebalance (at-least-once).
    ctx.log('warn', 'committing offsets failed', { reason: describeKafkaFailure(e, 'the stream broker') });
  }
  return false;
}
