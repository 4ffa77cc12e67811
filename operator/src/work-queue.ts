/**
 * A rate-limited work queue with the semantics of client-go's
 * k8s.io/client-go/util/workqueue, which the reconcilers rely on:
 *
 * - keys (`Kind/namespace/name`) are deduplicated while they wait, so a burst
 *   of events for one object costs one reconcile;
 * - a key is never handed to two workers at once: adding a key that is being
 *   processed only marks it dirty, and `done()` puts it back in the queue;
 * - failures are retried after a per-key exponential back-off that `forget()`
 *   resets, and `addAfter()` schedules a later re-check.
 *
 * One deliberate difference: after `shutDown()` no more keys are handed out
 * (client-go lets workers empty the queue first). The operator shuts its queue
 * down when it loses leadership or exits, and must not start reconciles then;
 * the next leader lists every object again, so nothing waiting is lost.
 */

/** Per-key exponential back-off, as client-go's ItemExponentialFailureRateLimiter. */
export interface BackoffOptions {
  /** Delay after the first failure; doubles with each further one. Default 5 ms. */
  baseDelayMs?: number;
  /** Upper bound of the delay. Default 5 minutes. */
  maxDelayMs?: number;
  /**
   * Fraction (0..1) by which a delay is randomly shortened, so that keys that
   * failed together do not retry together. Shortening, not lengthening, keeps
   * maxDelayMs a true bound. Default 0 (no jitter).
   */
  jitter?: number;
  /** Source of randomness for the jitter, in [0, 1). Default Math.random. */
  random?: () => number;
}

export interface WorkQueueOptions {
  backoff?: BackoffOptions;
}

export const DEFAULT_BASE_DELAY_MS = 5;
export const DEFAULT_MAX_DELAY_MS = 5 * 60 * 1000;

/** Computes the retry delay of each key from the number of its failures since the last `forget`. */
export class ExponentialBackoff {
  readonly #baseDelayMs: number;
  readonly #maxDelayMs: number;
  readonly #jitter: number;
  readonly #random: () => number;
  readonly #failures = new Map<string, number>();

  constructor(options: BackoffOptions = {}) {
    this.#baseDelayMs = options.baseDelayMs ?? DEFAULT_BASE_DELAY_MS;
    this.#maxDelayMs = options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS;
    this.#jitter = options.jitter ?? 0;
    this.#random = options.random ?? Math.random;
    if (!(this.#baseDelayMs >= 0) || !(this.#maxDelayMs >= this.#baseDelayMs)) {
      throw new RangeError(
        `back-off needs 0 <= baseDelayMs <= maxDelayMs, got ${this.#baseDelayMs} and ${this.#maxDelayMs}`,
      );
    }
    if (!(this.#jitter >= 0 && this.#jitter <= 1)) {
      throw new RangeError(`back-off jitter must be within [0, 1], got ${this.#jitter}`);
    }
  }

  /** Records one more failure of `key` and returns how long to wait before retrying it. */
  next(key: string): number {
    const failures = this.#failures.get(key) ?? 0;
    this.#failures.set(key, failures + 1);
    // 2 ** failures overflows to Infinity after ~1000 failures; the cap handles it.
    const delay = Math.min(this.#baseDelayMs * 2 ** failures, this.#maxDelayMs);
    return this.#jitter > 0 ? delay * (1 - this.#jitter * this.#random()) : delay;
  }

  /** Forgets the failures of `key`: its next failure waits baseDelayMs again. */
  forget(key: string): void {
    this.#failures.delete(key);
  }

  /** The number of failures of `key` since it was last forgotten. */
  failures(key: string): number {
    return this.#failures.get(key) ?? 0;
  }
}

interface Delayed {
  readyAt: number;
  timer: ReturnType<typeof setTimeout>;
}

export class WorkQueue {
  // Keys waiting to be handed out, in order; `head` avoids O(n) shifts.
  #queue: string[] = [];
  #head = 0;
  // Every key that needs processing: those waiting, and those processing that
  // were added again meanwhile. A key waits at most once.
  readonly #dirty = new Set<string>();
  readonly #processing = new Set<string>();
  readonly #getters: Array<(key: string | undefined) => void> = [];
  readonly #drainers: Array<() => void> = [];
  // At most one timer per key (the earliest wins), so the number of timers is
  // bounded by the number of keys, and all are cleared on shutdown.
  readonly #delayed = new Map<string, Delayed>();
  readonly #backoff: ExponentialBackoff;
  #shuttingDown = false;

  constructor(options: WorkQueueOptions = {}) {
    this.#backoff = new ExponentialBackoff(options.backoff);
  }

  /** Marks `key` as needing processing. No-op if it already waits, or after shutdown. */
  add(key: string): void {
    if (this.#shuttingDown || this.#dirty.has(key)) return;
    this.#dirty.add(key);
    // Processing now: done() re-queues it, so it is never processed twice at once.
    if (this.#processing.has(key)) return;
    this.#queue.push(key);
    this.#handOut();
  }

  /** Adds `key` after `delayMs`. While it is scheduled, a later request is ignored and an earlier one wins. */
  addAfter(key: string, delayMs: number): void {
    if (this.#shuttingDown) return;
    if (!(delayMs > 0)) {
      this.add(key);
      return;
    }
    const readyAt = Date.now() + delayMs;
    const scheduled = this.#delayed.get(key);
    if (scheduled) {
      if (scheduled.readyAt <= readyAt) return;
      clearTimeout(scheduled.timer);
    }
    const timer = setTimeout(() => {
      this.#delayed.delete(key);
      this.add(key);
    }, delayMs);
    this.#delayed.set(key, { readyAt, timer });
  }

  /** Adds `key` after its back-off delay, which grows with each call until `forget(key)`. */
  addRateLimited(key: string): void {
    if (this.#shuttingDown) return;
    this.addAfter(key, this.#backoff.next(key));
  }

  /** Resets the back-off of `key`; call it when `key` was processed successfully. */
  forget(key: string): void {
    this.#backoff.forget(key);
  }

  /** How many times `key` was rate-limited since it was last forgotten. */
  numRequeues(key: string): number {
    return this.#backoff.failures(key);
  }

  /**
   * Waits for a key and marks it as processing; the caller must call
   * `done(key)` when it has finished. Resolves undefined once the queue is
   * shut down: the worker should then stop.
   */
  get(): Promise<string | undefined> {
    if (this.#shuttingDown) return Promise.resolve(undefined);
    const key = this.#take();
    if (key !== undefined) return Promise.resolve(key);
    return new Promise((resolve) => this.#getters.push(resolve));
  }

  /** Marks `key` as processed; if it was added meanwhile, it waits again. */
  done(key: string): void {
    if (!this.#processing.delete(key)) return;
    if (this.#dirty.has(key) && !this.#shuttingDown) {
      this.#queue.push(key);
      this.#handOut();
    }
    if (this.#processing.size === 0) {
      for (const resolve of this.#drainers.splice(0)) resolve();
    }
  }

  /** The number of keys waiting to be handed out (not those processing or scheduled for later). */
  len(): number {
    return this.#queue.length - this.#head;
  }

  /** The number of keys handed out and not yet done. */
  processing(): number {
    return this.#processing.size;
  }

  isShuttingDown(): boolean {
    return this.#shuttingDown;
  }

  /**
   * Stops the queue: new keys are ignored, waiting and scheduled keys are
   * dropped (their timers cleared), and every pending and future `get()`
   * resolves undefined. Keys being processed may still be marked `done()`.
   */
  shutDown(): void {
    if (this.#shuttingDown) return;
    this.#shuttingDown = true;
    for (const { timer } of this.#delayed.values()) clearTimeout(timer);
    this.#delayed.clear();
    this.#queue = [];
    this.#head = 0;
    this.#dirty.clear();
    for (const resolve of this.#getters.splice(0)) resolve(undefined);
    if (this.#processing.size === 0) {
      for (const resolve of this.#drainers.splice(0)) resolve();
    }
  }

  /** Shuts the queue down and resolves once every key being processed is done (client-go's ShutDownWithDrain). */
  drain(): Promise<void> {
    this.shutDown();
    if (this.#processing.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.#drainers.push(resolve));
  }

  #take(): string | undefined {
    if (this.#head >= this.#queue.length) return undefined;
    const key = this.#queue[this.#head] as string;
    this.#head += 1;
    // Compact once the consumed prefix dominates, keeping memory proportional to what waits.
    if (this.#head > 64 && this.#head * 2 > this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    this.#dirty.delete(key);
    this.#processing.add(key);
    return key;
  }

  #handOut(): void {
    while (this.#getters.length > 0) {
      const key = this.#take();
      if (key === undefined) return;
      (this.#getters.shift() as (key: string | undefined) => void)(key);
    }
  }
}

/** What a reconcile handler may return: `requeueAfter` schedules a periodic re-check. */
export type ReconcileResult = void | undefined | { requeueAfter?: number };

export interface RunWorkersOptions {
  /** Called with each error the handler throws; the key has already been re-added rate-limited. */
  onError?: (error: unknown, key: string) => void;
}

/**
 * Runs `concurrency` worker loops over `queue` until it shuts down, and
 * resolves when all have stopped (each finishing the key it holds). A key
 * whose handler throws is retried with back-off; one that succeeds has its
 * back-off forgotten, and is re-checked after `requeueAfter` if it asks.
 */
export async function runWorkers(
  queue: WorkQueue,
  concurrency: number,
  handler: (key: string) => ReconcileResult | Promise<ReconcileResult>,
  options: RunWorkersOptions = {},
): Promise<void> {
  if (!Number.isInteger(concurrency) || concurrency < 1) {
    throw new RangeError(`concurrency must be a positive integer, got ${concurrency}`);
  }
  const worker = async (): Promise<void> => {
    for (;;) {
      const key = await queue.get();
      if (key === undefined) return;
      try {
        const result = await handler(key);
        queue.forget(key);
        if (result && result.requeueAfter !== undefined) queue.addAfter(key, result.requeueAfter);
      } catch (error) {
        queue.addRateLimited(key);
        try {
          options.onError?.(error, key);
        } catch {
          // A failing error reporter must not stop the worker.
        }
      } finally {
        queue.done(key);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}
