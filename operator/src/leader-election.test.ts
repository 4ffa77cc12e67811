import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import {
  DEFAULT_LEASE_DURATION_MS,
  DEFAULT_RENEW_DEADLINE_MS,
  DEFAULT_RETRY_PERIOD_MS,
  JITTER_FACTOR,
  LeaderElector,
  LeaseConflictError,
  type LeaderElectorOptions,
  type LeaseRecord,
  type LeaseStore,
} from './leader-election.js';
import { MemoryLeaseStore } from './lease-store-memory.js';

const LEASE = DEFAULT_LEASE_DURATION_MS; // 15 s
const DEADLINE = DEFAULT_RENEW_DEADLINE_MS; // 10 s
const RETRY = DEFAULT_RETRY_PERIOD_MS; // 2 s
/** The longest wait between two acquire attempts. */
const MAX_RETRY_WAIT = RETRY * (1 + JITTER_FACTOR);
const STEP = 100;

type Mode = 'ok' | 'failing' | 'hanging' | 'lossy';

/**
 * One candidate's view of the shared store, which the test can break: calls
 * fail before reaching it ('failing'), never answer ('hanging'), or reach it
 * but lose the answer ('lossy', as when the network drops the response).
 */
class FaultyStore implements LeaseStore {
  mode: Mode = 'ok';
  /** Latency of get(), as of a loaded API server. */
  readDelayMs = 0;

  constructor(private readonly inner: LeaseStore) {}

  get(): Promise<LeaseRecord | undefined> {
    return this.#call(async () => {
      if (this.readDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.readDelayMs));
      return this.inner.get();
    });
  }

  create(record: LeaseRecord): Promise<LeaseRecord> {
    return this.#call(() => this.inner.create(record));
  }

  update(record: LeaseRecord): Promise<LeaseRecord> {
    return this.#call(() => this.inner.update(record));
  }

  async #call<T>(op: () => Promise<T>): Promise<T> {
    switch (this.mode) {
      case 'failing':
        throw new Error('store unavailable');
      case 'hanging':
        return new Promise<T>(() => undefined);
      case 'lossy':
        await op();
        throw new Error('response lost');
      default:
        return op();
    }
  }
}

interface Candidate {
  elector: LeaderElector;
  store: FaultyStore;
  events: string[];
  /** The signal of the current term of leading work, if it has led. */
  leaderSignal(): AbortSignal | undefined;
  /** Whether its leading work runs: started and not yet told to stop. */
  working(): boolean;
  start(): void;
  stop(): Promise<void>;
  running(): Promise<void> | undefined;
  /** Whether the current run() has returned by itself (it lost leadership). */
  ended(): boolean;
}

function candidate(
  shared: LeaseStore,
  identity: string,
  options: Partial<LeaderElectorOptions> = {},
): Candidate {
  const store = new FaultyStore(shared);
  const events: string[] = [];
  let signal: AbortSignal | undefined;
  let controller: AbortController | undefined;
  let running: Promise<void> | undefined;
  let ended = false;
  const elector = new LeaderElector({
    store,
    identity,
    onStartedLeading: (s) => {
      events.push('started');
      signal = s;
    },
    onStoppedLeading: () => events.push('stopped'),
    onNewLeader: (id) => events.push(`leader:${id}`),
    ...options,
  });
  const c: Candidate = {
    elector,
    store,
    events,
    leaderSignal: () => signal,
    working: () => signal !== undefined && !signal.aborted,
    start: () => {
      controller = new AbortController();
      ended = false;
      const run = elector.run(controller.signal);
      running = run;
      const end = (): void => {
        if (running === run) ended = true;
      };
      run.then(end, end);
    },
    stop: async () => {
      const run = running;
      controller?.abort();
      // A run that rejected was already looked at by its test.
      await run?.catch(() => undefined);
      if (running === run) running = undefined;
    },
    running: () => running,
    ended: () => ended,
  };
  c.start();
  return c;
}

/** Advances fake time in steps until `condition` holds; returns the time it took. */
async function until(condition: () => boolean, limitMs: number, check?: () => void): Promise<number> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > limitMs) throw new Error(`condition not met within ${limitMs} ms`);
    await jest.advanceTimersByTimeAsync(STEP);
    check?.();
  }
  return Date.now() - start;
}

function leaders(...candidates: Candidate[]): string[] {
  return candidates.filter((c) => c.elector.isLeader()).map((c) => c.elector.identity);
}

describe('LeaderElector', () => {
  let shared: MemoryLeaseStore;
  let candidates: Candidate[];

  const make = (identity: string, options: Partial<LeaderElectorOptions> = {}): Candidate => {
    const c = candidate(shared, identity, options);
    candidates.push(c);
    return c;
  };

  beforeEach(() => {
    jest.useFakeTimers({ now: new Date('2030-01-01T00:00:00Z') });
    shared = new MemoryLeaseStore();
    candidates = [];
  });

  afterEach(async () => {
    for (const c of candidates) {
      c.store.mode = 'ok';
      const stopping = c.stop();
      await jest.advanceTimersByTimeAsync(LEASE);
      await stopping;
    }
    // Nothing left behind: no sleeping loop, no deadline timer.
    expect(jest.getTimerCount()).toBe(0);
    jest.useRealTimers();
  });

  it('elects exactly one of two candidates, and both learn who', async () => {
    const a = make('a');
    const b = make('b');
    await until(() => leaders(a, b).length === 1, 1_000);
    const [leader] = leaders(a, b);
    expect(leader).toBe('a'); // the first to try creates the lease
    const lease = await shared.get();
    expect(lease).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 15, leaseTransitions: 0 });
    expect(lease?.acquireTime).toBe('2030-01-01T00:00:00.000Z');
    expect(a.events).toEqual(['leader:a', 'started']);
    // b lost the race to create the lease; it sees a's on its next attempt.
    await jest.advanceTimersByTimeAsync(MAX_RETRY_WAIT);
    expect(b.events).toEqual(['leader:a']);

    // It stays so while the leader renews.
    for (let t = 0; t < 60_000; t += STEP) {
      await jest.advanceTimersByTimeAsync(STEP);
      expect(leaders(a, b)).toEqual(['a']);
    }
    const renewed = await shared.get();
    expect(renewed?.acquireTime).toBe(lease?.acquireTime);
    expect(Date.parse(renewed?.renewTime as string)).toBeGreaterThan(Date.now() - RETRY - STEP);
    expect(renewed?.leaseTransitions).toBe(0);
  });

  it('lets another candidate take over within the lease duration when the leader crashes', async () => {
    const a = make('a', { releaseOnCancel: false });
    await until(() => a.elector.isLeader(), 1_000);
    const b = make('b');
    await jest.advanceTimersByTimeAsync(30_000);
    expect(leaders(a, b)).toEqual(['a']);

    // A crash: it stops renewing and does not release.
    const lastRenew = Date.parse((await shared.get())?.renewTime as string);
    await a.stop();
    const crashedAt = Date.now();
    expect(a.elector.isLeader()).toBe(false);
    expect((await shared.get())?.holderIdentity).toBe('a');

    await until(
      () => b.elector.isLeader(),
      LEASE + 2 * MAX_RETRY_WAIT,
      () => expect(leaders(a, b).length).toBeLessThanOrEqual(1),
    );
    // Not before the lease, as last renewed, expired on b's clock...
    expect(Date.now()).toBeGreaterThanOrEqual(lastRenew + LEASE);
    // ...and no later than a lease duration plus the gaps of b's polling after that.
    expect(Date.now() - crashedAt).toBeLessThanOrEqual(LEASE + 2 * MAX_RETRY_WAIT);
    expect(await shared.get()).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    expect(b.events).toEqual(['leader:a', 'leader:b', 'started']);
  });

  it('hands over at once on a graceful stop, releasing the lease', async () => {
    const a = make('a');
    await until(() => a.elector.isLeader(), 1_000);
    const b = make('b');
    await jest.advanceTimersByTimeAsync(10_000);

    const stopping = a.stop();
    await jest.advanceTimersByTimeAsync(0);
    await stopping;
    expect(a.leaderSignal()?.aborted).toBe(true);
    expect(a.events).toEqual(['leader:a', 'started', 'stopped']);
    const released = await shared.get();
    expect(released?.holderIdentity).toBeUndefined();
    expect(released?.leaseDurationSeconds).toBe(1);

    // b takes it on its next attempt, not after a lease duration.
    const took = await until(() => b.elector.isLeader(), LEASE);
    expect(took).toBeLessThanOrEqual(MAX_RETRY_WAIT + STEP);
    expect(await shared.get()).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
  });

  it('on a graceful stop keeps the lease until the leading work has wound down', async () => {
    let finish: () => void = () => undefined;
    const a = make('a', {
      onStartedLeading: (signal) =>
        new Promise<void>((resolve) => {
          // Work that takes 30 s to stop, longer than a lease duration.
          signal.addEventListener('abort', () => setTimeout(resolve, 30_000));
          finish = resolve;
        }),
    });
    await until(() => a.elector.isLeader(), 1_000);
    const b = make('b');
    await jest.advanceTimersByTimeAsync(5_000);

    const stopping = a.stop();
    await jest.advanceTimersByTimeAsync(29_000);
    expect(a.elector.isLeader()).toBe(false);
    expect(b.elector.isLeader()).toBe(false);
    expect((await shared.get())?.holderIdentity).toBe('a');
    await jest.advanceTimersByTimeAsync(1_000);
    await stopping;
    finish();
    await until(() => b.elector.isLeader(), MAX_RETRY_WAIT + STEP);
  });

  it('steps down within the renew deadline when it cannot renew, aborting the leading signal', async () => {
    const a = make('a');
    await until(() => a.elector.isLeader(), 1_000);
    const b = make('b');
    await jest.advanceTimersByTimeAsync(20_000);
    const lastRenew = Date.parse((await shared.get())?.renewTime as string);

    a.store.mode = 'failing';
    const brokeAt = Date.now();
    let steppedDownAt: number | undefined;
    await until(
      () => a.events.includes('stopped'),
      DEADLINE + STEP,
      () => {
        if (!steppedDownAt && a.events.includes('stopped')) steppedDownAt = Date.now();
        expect(a.leaderSignal()?.aborted).toBe(a.events.includes('stopped'));
      },
    );
    steppedDownAt ??= Date.now();
    expect(steppedDownAt - brokeAt).toBeLessThanOrEqual(DEADLINE);
    expect(steppedDownAt).toBeLessThanOrEqual(lastRenew + DEADLINE);
    expect(a.leaderSignal()?.aborted).toBe(true);
    expect(a.elector.isLeader()).toBe(false);
    // run() ends once it has stopped leading.
    await expect(a.running()).resolves.toBeUndefined();

    // b, whose store works, takes over when the lease expires, never overlapping.
    await until(
      () => b.elector.isLeader(),
      LEASE,
      () => expect(leaders(a, b).length).toBeLessThanOrEqual(1),
    );
    expect(Date.now()).toBeGreaterThanOrEqual(lastRenew + LEASE);
  });

  it('steps down on time when the store hangs instead of failing', async () => {
    const a = make('a');
    await until(() => a.elector.isLeader(), 1_000);
    await jest.advanceTimersByTimeAsync(4_000);
    const lastRenew = Date.parse((await shared.get())?.renewTime as string);
    a.store.mode = 'hanging';
    await until(() => a.events.includes('stopped'), DEADLINE + STEP);
    expect(Date.now()).toBeLessThanOrEqual(lastRenew + DEADLINE + STEP);
    expect(a.leaderSignal()?.aborted).toBe(true);
    await expect(a.running()).resolves.toBeUndefined();
  });

  it('counts a renewal from its write, so slow reads do not make a healthy leader step down', async () => {
    const a = make('a');
    await until(() => a.elector.isLeader(), 1_000);
    const b = make('b');
    // Each read takes most of the renew deadline; writes stay fast.
    a.store.readDelayMs = DEADLINE - 2 * RETRY;
    for (let t = 0; t < 60_000; t += STEP) {
      await jest.advanceTimersByTimeAsync(STEP);
      expect(leaders(a, b)).toEqual(['a']);
    }
    expect(a.events).toEqual(['leader:a', 'started']);
  });

  it('isLeader() turns false at the renew deadline even before the step-down timer runs', async () => {
    let clockOffset = 0;
    const a = make('a', { now: () => Date.now() + clockOffset });
    await until(() => a.elector.isLeader(), 1_000);
    // The event loop was blocked for longer than the deadline: timers have not run yet.
    clockOffset = DEADLINE;
    expect(a.elector.isLeader()).toBe(false);
  });

  it('steps down at once on seeing another holder of the lease', async () => {
    const a = make('a');
    await until(() => a.elector.isLeader(), 1_000);
    // Someone else wrote the lease (say, after a's renewals were lost on the way).
    const current = (await shared.get()) as LeaseRecord;
    await shared.update({
      ...current,
      holderIdentity: 'intruder',
      leaseTransitions: current.leaseTransitions + 1,
    });
    await until(() => a.events.includes('stopped'), RETRY + STEP);
    expect(a.events).toEqual(['leader:a', 'started', 'leader:intruder', 'stopped']);
    expect(a.elector.observedLeader()).toBe('intruder');
  });

  it('ignores clock skew between candidates: expiry is measured on the local clock', async () => {
    const a = make('a', { now: () => Date.now() - 3_600_000 }); // an hour behind
    await until(() => a.elector.isLeader(), 1_000);
    // An hour ahead: a's renewTime looks two hours old to it.
    const b = make('b', { now: () => Date.now() + 3_600_000 });
    for (let t = 0; t < 60_000; t += STEP) {
      await jest.advanceTimersByTimeAsync(STEP);
      expect(leaders(a, b)).toEqual(['a']);
    }
    a.store.mode = 'failing';
    await until(
      () => b.elector.isLeader(),
      DEADLINE + LEASE + MAX_RETRY_WAIT,
      () => expect(leaders(a, b).length).toBeLessThanOrEqual(1),
    );
  });

  it('never lets two candidates lead at the same instant, whatever fails (many steps)', async () => {
    // A deterministic PRNG so a failure replays.
    let seed = 42;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    jest.spyOn(Math, 'random').mockImplementation(random);
    const cs = ['a', 'b', 'c'].map((id) =>
      make(id, {
        leaseDurationMs: 3_000,
        renewDeadlineMs: 2_000,
        retryPeriodMs: 500,
        releaseOnCancel: random() < 0.5,
      }),
    );
    const modes: Mode[] = ['ok', 'ok', 'ok', 'failing', 'hanging', 'lossy'];
    let handovers = 0;
    let previous: string | undefined;
    for (let step = 0; step < 6_000; step++) {
      const c = cs[Math.floor(random() * cs.length)] as Candidate;
      const roll = random();
      if (roll < 0.01) c.store.mode = modes[Math.floor(random() * modes.length)] as Mode;
      else if (roll < 0.015 && c.running()) void c.stop();
      else if (roll < 0.03 && !c.running()) c.start();
      else if (roll < 0.05) c.store.mode = 'ok';
      await jest.advanceTimersByTimeAsync(STEP);

      const leading = leaders(...cs);
      expect(leading.length).toBeLessThanOrEqual(1);
      // Stronger: no two terms of leading work overlap either.
      expect(cs.filter((x) => x.working()).length).toBeLessThanOrEqual(1);
      if (leading[0] && leading[0] !== previous) {
        handovers++;
        previous = leading[0];
      }
      // Runs that ended (lost leadership) campaign again, as a supervisor would restart them.
      for (const x of cs) {
        if (x.running() && x.ended()) x.start();
      }
    }
    // The schedule really exercised takeovers.
    expect(handovers).toBeGreaterThan(5);
  });

  it('reports a rejection of the leading work: releases the lease and run() rejects', async () => {
    const a = make('a', { onStartedLeading: () => Promise.reject(new Error('reconciler crashed')) });
    const b = make('b');
    const running = a.running() as Promise<void>;
    const outcome = running.then(
      () => 'resolved',
      (error: Error) => error.message,
    );
    await jest.advanceTimersByTimeAsync(0);
    expect(await outcome).toBe('reconciler crashed');
    expect(a.events).toEqual(['leader:a', 'stopped']);
    expect((await shared.get())?.holderIdentity).toBeUndefined();
    await until(() => b.elector.isLeader(), MAX_RETRY_WAIT + STEP);
  });

  it('keeps leading when the leading work returns normally', async () => {
    const a = make('a', { onStartedLeading: async () => undefined });
    await jest.advanceTimersByTimeAsync(30_000);
    expect(a.elector.isLeader()).toBe(true);
  });

  it('re-acquires its own lease at once after a restart with the same identity', async () => {
    const a = make('a', { releaseOnCancel: false });
    await until(() => a.elector.isLeader(), 1_000);
    await a.stop();
    const acquired = (await shared.get())?.acquireTime;
    const again = make('a');
    await until(() => again.elector.isLeader(), STEP);
    // Still the same term as far as the lease is concerned.
    expect(await shared.get()).toMatchObject({
      holderIdentity: 'a',
      acquireTime: acquired,
      leaseTransitions: 0,
    });
  });

  it('stops campaigning when aborted before it leads, without calling onStoppedLeading', async () => {
    const a = make('a');
    await until(() => a.elector.isLeader(), 1_000);
    const b = make('b');
    await jest.advanceTimersByTimeAsync(5_000);
    await b.stop();
    expect(b.events).toEqual(['leader:a']);
    expect((await shared.get())?.holderIdentity).toBe('a');
  });

  it('refuses to run twice at once', async () => {
    const a = make('a');
    await expect(a.elector.run(new AbortController().signal)).rejects.toThrow('already running');
  });

  it('reports store errors through onError and keeps trying', async () => {
    const errors: unknown[] = [];
    const a = make('a', { onError: (error) => errors.push(error) });
    a.store.mode = 'failing';
    await jest.advanceTimersByTimeAsync(10_000);
    expect(a.elector.isLeader()).toBe(false);
    expect(errors.length).toBeGreaterThan(1);
    expect((errors[0] as Error).message).toBe('store unavailable');
    a.store.mode = 'ok';
    await until(() => a.elector.isLeader(), MAX_RETRY_WAIT + STEP);
  });

  it('rejects timings under which two leaders could overlap', () => {
    const base = {
      store: shared,
      identity: 'x',
      onStartedLeading: () => undefined,
      onStoppedLeading: () => undefined,
    };
    expect(() => new LeaderElector({ ...base, leaseDurationMs: 10_000, renewDeadlineMs: 10_000 })).toThrow(
      'leaseDurationMs must be greater than renewDeadlineMs',
    );
    expect(() => new LeaderElector({ ...base, renewDeadlineMs: 2_000, retryPeriodMs: 2_000 })).toThrow(
      'renewDeadlineMs must be greater than 1.2 * retryPeriodMs',
    );
    expect(() => new LeaderElector({ ...base, retryPeriodMs: 0 })).toThrow('retryPeriodMs must be positive');
    expect(() => new LeaderElector({ ...base, identity: '' })).toThrow('non-empty identity');
  });
});

describe('MemoryLeaseStore', () => {
  const record = (holder: string, rv?: string): LeaseRecord => ({
    holderIdentity: holder,
    leaseDurationSeconds: 15,
    leaseTransitions: 0,
    resourceVersion: rv,
  });

  it('has no lease at first, then the one created, with a version', async () => {
    const store = new MemoryLeaseStore();
    expect(await store.get()).toBeUndefined();
    const created = await store.create(record('a'));
    expect(created.resourceVersion).toBe('1');
    expect(await store.get()).toEqual(created);
  });

  it('refuses to create a lease that exists', async () => {
    const store = new MemoryLeaseStore();
    await store.create(record('a'));
    const error = await store.create(record('b')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LeaseConflictError);
    expect((error as LeaseConflictError).reason).toBe('already-exists');
    expect((await store.get())?.holderIdentity).toBe('a');
  });

  it('updates only from the current version, bumping it', async () => {
    const store = new MemoryLeaseStore();
    const created = await store.create(record('a'));
    const updated = await store.update({ ...created, holderIdentity: 'b' });
    expect(updated.resourceVersion).toBe('2');
    const stale = await store.update({ ...created, holderIdentity: 'c' }).catch((e: unknown) => e);
    expect((stale as LeaseConflictError).reason).toBe('conflict');
    expect((await store.get())?.holderIdentity).toBe('b');
  });

  it('updates unconditionally without a version, as the API server does', async () => {
    const store = new MemoryLeaseStore();
    await store.create(record('a'));
    await expect(store.update(record('b'))).resolves.toMatchObject({
      holderIdentity: 'b',
      resourceVersion: '2',
    });
  });

  it('creates a lease that is gone on update, as the API server does for Leases', async () => {
    const store = new MemoryLeaseStore();
    await store.create(record('a'));
    store.delete();
    expect(await store.get()).toBeUndefined();
    await expect(store.update(record('b', '1'))).resolves.toMatchObject({
      holderIdentity: 'b',
      resourceVersion: '2',
    });
    expect((await store.get())?.holderIdentity).toBe('b');
  });

  it('hands out copies, so callers cannot change what is stored', async () => {
    const store = new MemoryLeaseStore();
    const created = await store.create(record('a'));
    created.holderIdentity = 'mutated';
    const read = (await store.get()) as LeaseRecord;
    read.leaseTransitions = 99;
    expect(await store.get()).toMatchObject({ holderIdentity: 'a', leaseTransitions: 0 });
  });
});
