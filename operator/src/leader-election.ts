/**
 * Leader election through a coordination.k8s.io/v1 Lease, the way client-go's
 * leaderelection package does it, so that of several operator replicas one
 * reconciles at a time and another takes over when it dies.
 *
 * Expiry is judged on the candidate's own clock: a lease held by another is
 * expired when leaseDuration has passed, locally, since this candidate last
 * saw the lease record change. The renewTime written in the lease is never
 * compared with the local clock, so clock skew between machines does not
 * matter (only the rate at which clocks tick).
 *
 * Safety rests on renewDeadline < leaseDuration: a leader that could not renew
 * for renewDeadline (measured from the start of its last successful renewal)
 * steps down, before any other candidate can have seen its lease expire.
 */

/** The fields of a Lease (coordination.k8s.io/v1) that leader election uses. */
export interface LeaseRecord {
  holderIdentity?: string;
  leaseDurationSeconds: number;
  /** RFC 3339 timestamps. */
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions: number;
  /** Opaque version for optimistic concurrency, set by the store. */
  resourceVersion?: string;
}

/** Where the lease lives: the API server, or memory. */
export interface LeaseStore {
  /** The lease, or undefined if there is none. */
  get(): Promise<LeaseRecord | undefined>;
  /** Creates the lease; throws LeaseConflictError('already-exists') if it exists. */
  create(record: LeaseRecord): Promise<LeaseRecord>;
  /**
   * Replaces the lease, if `record.resourceVersion` is still current (the
   * elector always sends one: the API server refuses a Lease update without
   * it with a 422); throws
   * LeaseConflictError('conflict') otherwise. A lease that is gone is created
   * again, as the API server does for Leases (create-on-update): safe, since a
   * lease someone else created meanwhile has another version.
   */
  update(record: LeaseRecord): Promise<LeaseRecord>;
}

export type LeaseConflictReason = 'conflict' | 'already-exists' | 'not-found';

/** A write that lost a race with another writer; the elector simply tries again later. */
export class LeaseConflictError extends Error {
  constructor(
    readonly reason: LeaseConflictReason,
    message: string,
  ) {
    super(message);
    this.name = 'LeaseConflictError';
  }
}

export interface LeaderElectorOptions {
  store: LeaseStore;
  /** Unique per process (e.g. pod name + random suffix): two processes with one identity both lead. */
  identity: string;
  /** How long others wait before taking over a lease that is not renewed. Default 15 s. */
  leaseDurationMs?: number;
  /** How long the leader keeps trying to renew before it steps down. Default 10 s. */
  renewDeadlineMs?: number;
  /** The interval between attempts to acquire or renew. Default 2 s. */
  retryPeriodMs?: number;
  /** Release the lease when `run`'s signal aborts, so another candidate takes over at once. Default true. */
  releaseOnCancel?: boolean;
  /**
   * Called when this candidate becomes the leader. `signal` aborts when it
   * stops leading; the work must stop then. It may return at once (leading
   * continues) or return a promise: a rejection ends leadership (the lease is
   * released) and makes `run` reject with that error.
   */
  onStartedLeading(signal: AbortSignal): void | Promise<void>;
  /** Called once when this candidate stops leading, after having led. */
  onStoppedLeading(): void;
  /** Called when a new holder of the lease is observed, this candidate included. */
  onNewLeader?(identity: string): void;
  /** Called with failures that are otherwise only retried (store errors, callbacks that throw). */
  onError?(error: unknown): void;
  /** The local clock, in milliseconds. Default Date.now. */
  now?: () => number;
}

export const DEFAULT_LEASE_DURATION_MS = 15_000;
export const DEFAULT_RENEW_DEADLINE_MS = 10_000;
export const DEFAULT_RETRY_PERIOD_MS = 2_000;
/** Acquire attempts wait retryPeriod plus up to this fraction more of it (client-go's JitterFactor). */
export const JITTER_FACTOR = 1.2;

/** What one attempt to acquire or renew saw and did. */
interface Outcome {
  acquired: boolean;
  /**
   * Local time just before the write (or the attempt's start, if it wrote
   * nothing). A successful renewal counts from here: no one can see the new
   * record before it is written, so this is safe, and the read's latency does
   * not eat into the renew deadline.
   */
  startedAt: number;
  /** The record read or written, and the local time it was seen. */
  seen?: LeaseRecord;
  seenAt: number;
}

type StopReason = { kind: 'aborted' } | { kind: 'lost' } | { kind: 'failed'; error: unknown };

export class LeaderElector {
  readonly #store: LeaseStore;
  readonly #identity: string;
  readonly #leaseDurationMs: number;
  readonly #renewDeadlineMs: number;
  readonly #retryPeriodMs: number;
  readonly #releaseOnCancel: boolean;
  readonly #options: LeaderElectorOptions;
  readonly #now: () => number;

  #observed: LeaseRecord | undefined;
  /** Local time at which #observed last changed. */
  #observedAt = 0;
  #reportedLeader: string | undefined;
  #leading = false;
  #lastRenewAt = 0;
  #running = false;
  /** The store call of the latest attempt, settled or not (attempts are abandoned on timeout). */
  #inflight: Promise<unknown> = Promise.resolve();

  constructor(options: LeaderElectorOptions) {
    this.#options = options;
    this.#store = options.store;
    this.#identity = options.identity;
    this.#leaseDurationMs = options.leaseDurationMs ?? DEFAULT_LEASE_DURATION_MS;
    this.#renewDeadlineMs = options.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS;
    this.#retryPeriodMs = options.retryPeriodMs ?? DEFAULT_RETRY_PERIOD_MS;
    this.#releaseOnCancel = options.releaseOnCancel ?? true;
    this.#now = options.now ?? Date.now;
    if (!this.#identity) throw new RangeError('leader election needs a non-empty identity');
    // The same checks as client-go's NewLeaderElector: without them two leaders can overlap.
    if (!(this.#retryPeriodMs > 0)) throw new RangeError('retryPeriodMs must be positive');
    if (!(this.#leaseDurationMs > this.#renewDeadlineMs)) {
      throw new RangeError('leaseDurationMs must be greater than renewDeadlineMs');
    }
    if (!(this.#renewDeadlineMs > JITTER_FACTOR * this.#retryPeriodMs)) {
      throw new RangeError(`renewDeadlineMs must be greater than ${JITTER_FACTOR} * retryPeriodMs`);
    }
  }

  get identity(): string {
    return this.#identity;
  }

  /**
   * Whether this candidate leads now: it holds the lease and renewed it less
   * than renewDeadline ago. Checks the clock, so it turns false on time even
   * if the event loop was too busy to run the step-down timer.
   */
  isLeader(): boolean {
    return (
      this.#leading &&
      this.#observed?.holderIdentity === this.#identity &&
      this.#now() - this.#lastRenewAt < this.#renewDeadlineMs
    );
  }

  /** The holder of the lease as last observed, if any. */
  observedLeader(): string | undefined {
    return this.#observed?.holderIdentity || undefined;
  }

  /**
   * Campaigns until this candidate leads, then leads until `signal` aborts or
   * leadership is lost (renewal failed for renewDeadline, or another holder
   * was seen). Resolves when it has stopped leading and the leading work has
   * settled; call it again to campaign again. Rejects only if
   * onStartedLeading's promise rejects.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new Error('LeaderElector.run is already running');
    this.#running = true;
    try {
      const acquiredAt = await this.#acquire(signal);
      if (acquiredAt === undefined) {
        // An attempt abandoned at abort may still win the lease: give it back.
        if (this.#releaseOnCancel) await this.#release();
        return;
      }
      await this.#lead(signal, acquiredAt);
    } finally {
      this.#leading = false;
      this.#running = false;
    }
  }

  /** Tries until acquired (resolving the local time the winning attempt started) or aborted (undefined). */
  async #acquire(signal: AbortSignal): Promise<number | undefined> {
    for (;;) {
      if (signal.aborted) return undefined;
      const outcome = await this.#attempt(signal, this.#renewDeadlineMs);
      if (signal.aborted) return undefined;
      if (outcome) {
        this.#apply(outcome);
        if (outcome.acquired) return outcome.startedAt;
      }
      await sleep(this.#retryPeriodMs * (1 + Math.random() * JITTER_FACTOR), signal);
    }
  }

  async #lead(signal: AbortSignal, acquiredAt: number): Promise<void> {
    this.#leading = true;
    this.#lastRenewAt = acquiredAt;
    const leaderAbort = new AbortController();
    const renewStop = new AbortController();
    let stop!: (reason: StopReason) => void;
    const stopped = new Promise<StopReason>((resolve) => (stop = resolve));
    let lost = false;
    let stoppedReported = false;
    const reportStopped = (): void => {
      if (stoppedReported) return;
      stoppedReported = true;
      this.#safely(() => this.#options.onStoppedLeading());
    };

    // Losing is immediate and final: the work is told at once, without
    // waiting for it, since another candidate may be about to lead.
    let deadline: ReturnType<typeof setTimeout> | undefined;
    const lose = (): void => {
      if (lost) return;
      lost = true;
      this.#leading = false;
      clearTimeout(deadline);
      renewStop.abort();
      leaderAbort.abort();
      reportStopped();
      stop({ kind: 'lost' });
    };
    const armDeadline = (): void => {
      clearTimeout(deadline);
      deadline = setTimeout(lose, Math.max(0, this.#lastRenewAt + this.#renewDeadlineMs - this.#now()));
    };
    armDeadline();

    const onAbort = (): void => stop({ kind: 'aborted' });
    signal.addEventListener('abort', onAbort, { once: true });
    if (signal.aborted) onAbort();

    // Renewal runs until the leading work has stopped, so that on a graceful
    // stop no other candidate starts before this one's work has wound down.
    const renewing = this.#renew(renewStop.signal, armDeadline, lose);
    const work = (async () => this.#options.onStartedLeading(leaderAbort.signal))();
    work.catch((error: unknown) => stop({ kind: 'failed', error }));

    const reason = await stopped;
    signal.removeEventListener('abort', onAbort);
    this.#leading = false;
    leaderAbort.abort();
    const workError = await work.then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    if (workError && reason.kind !== 'failed') this.#safely(() => this.#options.onError?.(workError.error));
    renewStop.abort();
    clearTimeout(deadline);
    await renewing;
    if (!lost && (this.#releaseOnCancel || reason.kind === 'failed')) await this.#release();
    reportStopped();
    if (reason.kind === 'failed') throw reason.error;
  }

  /** Renews every retryPeriod until stopped; steps down at once on seeing another holder. */
  async #renew(stopSignal: AbortSignal, renewed: () => void, lose: () => void): Promise<void> {
    while (!stopSignal.aborted) {
      await sleep(this.#retryPeriodMs, stopSignal);
      if (stopSignal.aborted) return;
      // The step-down timer fires at the deadline; an attempt never needs to outlive it.
      const budget = this.#lastRenewAt + this.#renewDeadlineMs - this.#now();
      if (budget <= 0) continue;
      const outcome = await this.#attempt(stopSignal, budget);
      if (stopSignal.aborted || !outcome) continue;
      this.#apply(outcome);
      if (outcome.acquired) {
        this.#lastRenewAt = outcome.startedAt;
        renewed();
      } else {
        const holder = this.#observed?.holderIdentity;
        if (holder && holder !== this.#identity) lose();
      }
    }
  }

  /**
   * One attempt, abandoned (undefined) when it takes longer than `budgetMs`
   * or `signal` aborts: a hung API server must not keep a leader leading.
   */
  async #attempt(signal: AbortSignal, budgetMs: number): Promise<Outcome | undefined> {
    const call = this.#tryAcquireOrRenew();
    this.#inflight = call;
    return within(call, budgetMs, signal);
  }

  /** client-go's tryAcquireOrRenew. Never rejects: failures come back as not acquired. */
  async #tryAcquireOrRenew(): Promise<Outcome> {
    let startedAt = this.#now();
    const desired = (): LeaseRecord => {
      const stamp = new Date(startedAt).toISOString();
      return {
        holderIdentity: this.#identity,
        leaseDurationSeconds: Math.max(1, Math.ceil(this.#leaseDurationMs / 1000)),
        acquireTime: stamp,
        renewTime: stamp,
        leaseTransitions: 0,
      };
    };
    let current: LeaseRecord | undefined;
    try {
      current = await this.#store.get();
      if (!current) {
        startedAt = this.#now();
        const created = await this.#store.create(desired());
        return { acquired: true, startedAt, seen: created, seenAt: this.#now() };
      }
    } catch (error) {
      this.#safely(() => this.#options.onError?.(error));
      return { acquired: false, startedAt, seenAt: this.#now() };
    }
    const seenAt = this.#now();
    const observedAt = this.#observed && sameRecord(current, this.#observed) ? this.#observedAt : seenAt;
    const holder = current.holderIdentity;
    if (holder && holder !== this.#identity && observedAt + current.leaseDurationSeconds * 1000 > seenAt) {
      return { acquired: false, startedAt, seen: current, seenAt };
    }
    startedAt = seenAt;
    const record: LeaseRecord = { ...desired(), resourceVersion: current.resourceVersion };
    if (holder === this.#identity) {
      record.acquireTime = current.acquireTime;
      record.leaseTransitions = current.leaseTransitions;
    } else {
      record.leaseTransitions = current.leaseTransitions + 1;
    }
    try {
      const updated = await this.#store.update(record);
      return { acquired: true, startedAt, seen: updated, seenAt: this.#now() };
    } catch (error) {
      this.#safely(() => this.#options.onError?.(error));
      return { acquired: false, startedAt, seen: current, seenAt };
    }
  }

  /** Records what an attempt saw; the observation time moves only when the record changed. */
  #apply(outcome: Outcome): void {
    const seen = outcome.seen;
    if (!seen) return;
    if (!this.#observed || !sameRecord(seen, this.#observed)) this.#observedAt = outcome.seenAt;
    this.#observed = seen;
    const holder = seen.holderIdentity;
    if (holder && holder !== this.#reportedLeader) {
      this.#reportedLeader = holder;
      const report = this.#options.onNewLeader;
      if (report) this.#safely(() => report(holder));
    }
  }

  /**
   * Gives the lease up if this candidate holds it: no holder and a one-second
   * duration, so the next candidate to look acquires it at once. Reads first
   * (after any abandoned attempt settles) so that it writes over the latest
   * version; bounded by renewDeadline.
   */
  async #release(): Promise<void> {
    const release = async (): Promise<void> => {
      await this.#inflight.catch(() => undefined);
      const current = await this.#store.get();
      if (!current || current.holderIdentity !== this.#identity) return;
      const now = this.#now();
      const stamp = new Date(now).toISOString();
      const released = await this.#store.update({
        leaseDurationSeconds: 1,
        acquireTime: stamp,
        renewTime: stamp,
        leaseTransitions: current.leaseTransitions,
        resourceVersion: current.resourceVersion,
      });
      this.#apply({ acquired: false, startedAt: now, seen: released, seenAt: this.#now() });
    };
    try {
      await within(release(), this.#renewDeadlineMs);
    } catch (error) {
      this.#safely(() => this.#options.onError?.(error));
    }
  }

  #safely(callback: () => void): void {
    try {
      callback();
    } catch (error) {
      if (this.#options.onError) {
        try {
          this.#options.onError(error);
        } catch {
          // Nothing more to tell.
        }
      }
    }
  }
}

/** Whether two records are the same observation (client-go compares the record, not its version). */
function sameRecord(a: LeaseRecord, b: LeaseRecord): boolean {
  return (
    (a.holderIdentity ?? '') === (b.holderIdentity ?? '') &&
    a.leaseDurationSeconds === b.leaseDurationSeconds &&
    a.acquireTime === b.acquireTime &&
    a.renewTime === b.renewTime &&
    a.leaseTransitions === b.leaseTransitions
  );
}

/** Resolves after `ms`, or at once when `signal` aborts; leaves no timer behind. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const finish = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', finish);
      resolve();
    };
    const timer = setTimeout(finish, ms);
    signal.addEventListener('abort', finish, { once: true });
  });
}

/** `promise`'s result, or undefined if it takes longer than `ms` or `signal` aborts first; leaves no timer behind. */
function within<T>(promise: Promise<T>, ms: number, signal?: AbortSignal): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      resolve(undefined);
      return;
    }
    const cleanUp = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    const onAbort = (): void => {
      cleanUp();
      resolve(undefined);
    };
    const timer = setTimeout(onAbort, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        cleanUp();
        resolve(value);
      },
      (error: unknown) => {
        cleanUp();
        reject(error);
      },
    );
  });
}
