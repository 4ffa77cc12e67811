// The restart back-off of the process runtime, with the kubelet's numbers
// (its CrashLoopBackOff): a worker that ends is restarted at once the first
// time, then after 10 s, 20 s, 40 s … capped at 5 min; a worker that had been
// ready for 10 min before it ended starts the sequence over. So one crash
// costs a restart and no wait, and a worker that cannot start is retried
// forever at most every 5 min without spinning, as a pod would be.

export interface BackoffTiming {
  /** The second restart's delay; each next one doubles it. */
  baseMs: number;
  maxMs: number;
  /** Ready this long before it ended: the next restart is at once again. */
  resetAfterMs: number;
}

/** kubelet's: 10 s doubling to 5 min, reset after 10 min. */
export const KUBELET_BACKOFF: BackoffTiming = { baseMs: 10_000, maxMs: 300_000, resetAfterMs: 600_000 };

/**
 * SLUICE_WORKER_BACKOFF_BASE_MS replaces the 10 s (tests shorten it); the cap
 * and the reset keep kubelet's proportions to it (30 and 60 times).
 */
export function backoffTiming(env: NodeJS.ProcessEnv = process.env): BackoffTiming {
  const raw = env.SLUICE_WORKER_BACKOFF_BASE_MS;
  if (raw === undefined || raw === '') return KUBELET_BACKOFF;
  const baseMs = Number(raw);
  if (!Number.isInteger(baseMs) || baseMs <= 0) {
    throw new Error(`SLUICE_WORKER_BACKOFF_BASE_MS must be a positive integer, not ${raw}`);
  }
  return { baseMs, maxMs: baseMs * 30, resetAfterMs: baseMs * 60 };
}

/** The back-off of one worker: `next` on each end gives the wait before its restart. */
export class CrashBackoff {
  /** Restarts since the sequence last started over. */
  private step = 0;

  constructor(private readonly timing: BackoffTiming) {}

  /** The wait before restarting a worker that just ended, having been ready for `readyMs` of its run. */
  next(readyMs: number): number {
    if (readyMs >= this.timing.resetAfterMs) this.step = 0;
    const delay =
      this.step === 0 ? 0 : Math.min(this.timing.baseMs * 2 ** (this.step - 1), this.timing.maxMs);
    this.step++;
    return delay;
  }
}
