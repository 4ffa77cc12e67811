import { afterEach, beforeEach, describe, expect, it, jest } from '@jest/globals';
import {
  DEFAULT_BASE_DELAY_MS,
  DEFAULT_MAX_DELAY_MS,
  ExponentialBackoff,
  runWorkers,
  WorkQueue,
  type ReconcileResult,
} from './work-queue.js';

/** Whether `promise` has settled, without waiting for timers. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => (done = true),
    () => (done = true),
  );
  // A few turns of the microtask queue are enough for an already-resolved chain.
  for (let i = 0; i < 5; i++) await Promise.resolve();
  return done;
}

/** Takes every key that waits now, marking each done at once. */
async function takeAll(queue: WorkQueue): Promise<string[]> {
  const keys: string[] = [];
  while (queue.len() > 0) {
    const key = (await queue.get()) as string;
    keys.push(key);
    queue.done(key);
  }
  return keys;
}

/** A small deterministic PRNG (mulberry32), so randomized tests replay. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('WorkQueue', () => {
  beforeEach(() => {
    jest.useFakeTimers();
  });
  afterEach(() => {
    expect(jest.getTimerCount()).toBe(0);
    jest.useRealTimers();
  });

  describe('add and get', () => {
    it('hands keys out in the order they were added', async () => {
      const queue = new WorkQueue();
      queue.add('Connector/ns/a');
      queue.add('Pipeline/ns/b');
      queue.add('Warehouse/ns/c');
      expect(queue.len()).toBe(3);
      expect(await takeAll(queue)).toEqual(['Connector/ns/a', 'Pipeline/ns/b', 'Warehouse/ns/c']);
      expect(queue.len()).toBe(0);
    });

    it('dedupes a key that is waiting, keeping its first position', async () => {
      const queue = new WorkQueue();
      queue.add('a');
      queue.add('b');
      queue.add('a');
      queue.add('b');
      queue.add('a');
      expect(queue.len()).toBe(2);
      expect(await takeAll(queue)).toEqual(['a', 'b']);
    });

    it('lets a get() that waits receive the next key, waiters served in order', async () => {
      const queue = new WorkQueue();
      const first = queue.get();
      const second = queue.get();
      expect(await settled(first)).toBe(false);
      queue.add('x');
      queue.add('y');
      expect(await first).toBe('x');
      expect(await second).toBe('y');
      expect(queue.processing()).toBe(2);
      expect(queue.len()).toBe(0);
    });

    it('keeps order over many keys (the internal compaction keeps FIFO)', async () => {
      const queue = new WorkQueue();
      const keys = Array.from({ length: 500 }, (_, i) => `Kind/ns/${i}`);
      const taken: string[] = [];
      for (const [i, key] of keys.entries()) {
        queue.add(key);
        // Interleave takes with adds so that the head moves while keys arrive.
        if (i % 3 === 0) {
          const k = (await queue.get()) as string;
          taken.push(k);
          queue.done(k);
        }
      }
      taken.push(...(await takeAll(queue)));
      expect(taken).toEqual(keys);
    });
  });

  describe('processing', () => {
    it('never hands a key being processed to a second worker: it is marked dirty and re-queued by done()', async () => {
      const queue = new WorkQueue();
      queue.add('a');
      const key = await queue.get();
      expect(key).toBe('a');

      queue.add('a');
      queue.add('a');
      expect(queue.len()).toBe(0);
      const second = queue.get();
      expect(await settled(second)).toBe(false);

      queue.done('a');
      expect(await second).toBe('a');
      // Added twice while processing, re-queued once.
      queue.done('a');
      expect(queue.len()).toBe(0);
    });

    it('does not re-queue a key that was not added while processing', async () => {
      const queue = new WorkQueue();
      queue.add('a');
      await queue.get();
      queue.done('a');
      expect(queue.len()).toBe(0);
      expect(queue.processing()).toBe(0);
    });

    it('serves other keys while one is processing', async () => {
      const queue = new WorkQueue();
      queue.add('a');
      await queue.get();
      queue.add('a');
      queue.add('b');
      expect(queue.len()).toBe(1);
      expect(await queue.get()).toBe('b');
    });

    it('ignores done() for a key that is not processing', () => {
      const queue = new WorkQueue();
      queue.add('a');
      queue.done('a');
      queue.done('zzz');
      expect(queue.len()).toBe(1);
      expect(queue.processing()).toBe(0);
      queue.shutDown();
    });
  });

  describe('addAfter', () => {
    it('adds the key once the delay has passed', async () => {
      const queue = new WorkQueue();
      queue.addAfter('a', 1000);
      expect(queue.len()).toBe(0);
      await jest.advanceTimersByTimeAsync(999);
      expect(queue.len()).toBe(0);
      await jest.advanceTimersByTimeAsync(1);
      expect(queue.len()).toBe(1);
      expect(await queue.get()).toBe('a');
      queue.done('a');
    });

    it('adds at once for a delay of zero or less', () => {
      const queue = new WorkQueue();
      queue.addAfter('a', 0);
      queue.addAfter('b', -5);
      expect(queue.len()).toBe(2);
      expect(jest.getTimerCount()).toBe(0);
      queue.shutDown();
    });

    it('keeps one timer per key, the earliest request winning', async () => {
      const queue = new WorkQueue();
      queue.addAfter('a', 500);
      queue.addAfter('a', 900); // later: ignored
      expect(jest.getTimerCount()).toBe(1);
      queue.addAfter('a', 100); // earlier: replaces
      expect(jest.getTimerCount()).toBe(1);
      await jest.advanceTimersByTimeAsync(100);
      expect(queue.len()).toBe(1);
      await jest.advanceTimersByTimeAsync(1000);
      expect(queue.len()).toBe(1);
      expect(await takeAll(queue)).toEqual(['a']);
    });

    it('wakes a waiting get()', async () => {
      const queue = new WorkQueue();
      const next = queue.get();
      queue.addAfter('a', 50);
      await jest.advanceTimersByTimeAsync(50);
      expect(await next).toBe('a');
      queue.done('a');
    });

    it('marks a key that is processing when its delay ends dirty instead of handing it out', async () => {
      const queue = new WorkQueue();
      queue.add('a');
      await queue.get();
      queue.addAfter('a', 10);
      await jest.advanceTimersByTimeAsync(10);
      expect(queue.len()).toBe(0);
      queue.done('a');
      expect(queue.len()).toBe(1);
      queue.shutDown();
    });
  });

  describe('rate limiting', () => {
    it('re-adds a key after a back-off that doubles from 5 ms', async () => {
      const queue = new WorkQueue();
      const observed: number[] = [];
      for (let i = 0; i < 5; i++) {
        const start = Date.now();
        queue.addRateLimited('a');
        while (queue.len() === 0) await jest.advanceTimersByTimeAsync(1);
        observed.push(Date.now() - start);
        await takeAll(queue);
      }
      expect(observed).toEqual([5, 10, 20, 40, 80]);
      expect(queue.numRequeues('a')).toBe(5);
    });

    it('forget() resets the back-off of that key only', async () => {
      const queue = new WorkQueue();
      queue.addRateLimited('a');
      queue.addRateLimited('b');
      await jest.advanceTimersByTimeAsync(5);
      await takeAll(queue);
      queue.addRateLimited('a');
      queue.addRateLimited('b');
      await jest.advanceTimersByTimeAsync(10);
      await takeAll(queue);
      expect(queue.numRequeues('a')).toBe(2);

      queue.forget('a');
      expect(queue.numRequeues('a')).toBe(0);
      expect(queue.numRequeues('b')).toBe(2);
      queue.addRateLimited('a');
      queue.addRateLimited('b');
      await jest.advanceTimersByTimeAsync(5);
      expect(await takeAll(queue)).toEqual(['a']);
      await jest.advanceTimersByTimeAsync(15);
      expect(await takeAll(queue)).toEqual(['b']);
    });

    it('takes its back-off bounds from the options', async () => {
      const queue = new WorkQueue({ backoff: { baseDelayMs: 100, maxDelayMs: 250 } });
      const delays: number[] = [];
      for (let i = 0; i < 4; i++) {
        const start = Date.now();
        queue.addRateLimited('a');
        while (queue.len() === 0) await jest.advanceTimersByTimeAsync(10);
        delays.push(Date.now() - start);
        await takeAll(queue);
      }
      expect(delays).toEqual([100, 200, 250, 250]);
    });
  });

  describe('shutDown and drain', () => {
    it('resolves waiting and later get() calls with undefined and ignores new keys', async () => {
      const queue = new WorkQueue();
      const waiting = [queue.get(), queue.get()];
      queue.shutDown();
      expect(await Promise.all(waiting)).toEqual([undefined, undefined]);
      queue.add('a');
      queue.addAfter('b', 10);
      queue.addRateLimited('c');
      expect(queue.len()).toBe(0);
      expect(await queue.get()).toBeUndefined();
      expect(queue.isShuttingDown()).toBe(true);
    });

    it('drops waiting keys and clears every scheduled timer', async () => {
      const queue = new WorkQueue();
      queue.add('a');
      queue.addAfter('b', 60_000);
      for (let i = 0; i < 10; i++) queue.addRateLimited(`k${i}`);
      expect(jest.getTimerCount()).toBe(11);
      queue.shutDown();
      expect(jest.getTimerCount()).toBe(0);
      expect(queue.len()).toBe(0);
      expect(await queue.get()).toBeUndefined();
    });

    it('does not re-queue a dirty key whose processing ends after shutdown', async () => {
      const queue = new WorkQueue();
      queue.add('a');
      await queue.get();
      queue.add('a');
      queue.shutDown();
      queue.done('a');
      expect(queue.len()).toBe(0);
      expect(await queue.get()).toBeUndefined();
    });

    it('drain() resolves once the keys in flight are done', async () => {
      const queue = new WorkQueue();
      queue.add('a');
      queue.add('b');
      queue.add('c');
      await queue.get();
      await queue.get();
      const drained = queue.drain();
      expect(queue.isShuttingDown()).toBe(true);
      expect(await queue.get()).toBeUndefined(); // 'c' was dropped
      expect(await settled(drained)).toBe(false);
      queue.done('a');
      expect(await settled(drained)).toBe(false);
      queue.done('b');
      expect(await settled(drained)).toBe(true);
    });

    it('drain() resolves at once when nothing is in flight, and shutDown() is idempotent', async () => {
      const queue = new WorkQueue();
      queue.shutDown();
      queue.shutDown();
      await expect(queue.drain()).resolves.toBeUndefined();
    });
  });
});

describe('ExponentialBackoff', () => {
  it('defaults to 5 ms doubling up to 5 minutes', () => {
    expect(DEFAULT_BASE_DELAY_MS).toBe(5);
    expect(DEFAULT_MAX_DELAY_MS).toBe(300_000);
    const backoff = new ExponentialBackoff();
    const delays = Array.from({ length: 20 }, () => backoff.next('k'));
    expect(delays.slice(0, 5)).toEqual([5, 10, 20, 40, 80]);
    // 5 * 2^15 = 163840 < 300000 <= 5 * 2^16
    expect(delays[15]).toBe(163_840);
    expect(delays.slice(16)).toEqual([300_000, 300_000, 300_000, 300_000]);
  });

  it('stays at the cap (no overflow) after very many failures', () => {
    const backoff = new ExponentialBackoff({ baseDelayMs: 1, maxDelayMs: 1000 });
    let last = 0;
    for (let i = 0; i < 2000; i++) last = backoff.next('k');
    expect(last).toBe(1000);
    expect(backoff.failures('k')).toBe(2000);
  });

  it('counts failures per key and forgets one key', () => {
    const backoff = new ExponentialBackoff();
    backoff.next('a');
    backoff.next('a');
    backoff.next('b');
    expect(backoff.next('a')).toBe(20);
    expect(backoff.next('b')).toBe(10);
    backoff.forget('a');
    expect(backoff.failures('a')).toBe(0);
    expect(backoff.next('a')).toBe(5);
    expect(backoff.failures('b')).toBe(2);
  });

  it('shortens delays by at most the jitter fraction and never exceeds the cap', () => {
    const random = prng(7);
    const backoff = new ExponentialBackoff({ baseDelayMs: 10, maxDelayMs: 1000, jitter: 0.25, random });
    for (let i = 0; i < 40; i++) {
      const nominal = Math.min(10 * 2 ** i, 1000);
      const delay = backoff.next('k');
      expect(delay).toBeLessThanOrEqual(nominal);
      expect(delay).toBeGreaterThanOrEqual(nominal * 0.75);
    }
    const fixed = new ExponentialBackoff({ baseDelayMs: 100, jitter: 0.5, random: () => 0.5 });
    expect(fixed.next('k')).toBe(75);
  });

  it('rejects inconsistent options', () => {
    expect(() => new ExponentialBackoff({ baseDelayMs: 10, maxDelayMs: 5 })).toThrow(RangeError);
    expect(() => new ExponentialBackoff({ baseDelayMs: -1 })).toThrow(RangeError);
    expect(() => new ExponentialBackoff({ jitter: 1.5 })).toThrow(RangeError);
    expect(() => new ExponentialBackoff({ baseDelayMs: Number.NaN })).toThrow(RangeError);
  });
});

describe('runWorkers', () => {
  beforeEach(() => {
    jest.useFakeTimers();
  });
  afterEach(() => {
    expect(jest.getTimerCount()).toBe(0);
    jest.useRealTimers();
  });

  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

  it('processes keys concurrently up to the concurrency, and stops on shutdown', async () => {
    const queue = new WorkQueue();
    let active = 0;
    let maxActive = 0;
    const seen: string[] = [];
    const workers = runWorkers(queue, 3, async (key) => {
      seen.push(key);
      active++;
      maxActive = Math.max(maxActive, active);
      await sleep(100);
      active--;
    });
    for (let i = 0; i < 7; i++) queue.add(`k${i}`);
    await jest.advanceTimersByTimeAsync(50);
    expect(seen).toEqual(['k0', 'k1', 'k2']);
    await jest.advanceTimersByTimeAsync(100);
    expect(seen).toEqual(['k0', 'k1', 'k2', 'k3', 'k4', 'k5']);
    await jest.advanceTimersByTimeAsync(100);
    expect(seen).toHaveLength(7);
    await jest.advanceTimersByTimeAsync(100);
    expect(maxActive).toBe(3);
    expect(queue.processing()).toBe(0);

    queue.shutDown();
    await expect(workers).resolves.toBeUndefined();
  });

  it('never runs the handler for one key twice at once, and reprocesses a key added while it ran', async () => {
    const queue = new WorkQueue();
    const active = new Set<string>();
    const runs: string[] = [];
    let overlaps = 0;
    const workers = runWorkers(queue, 4, async (key) => {
      if (active.has(key)) overlaps++;
      active.add(key);
      runs.push(key);
      await sleep(50);
      active.delete(key);
    });
    queue.add('a');
    await jest.advanceTimersByTimeAsync(10);
    // Three more adds while 'a' runs, with three idle workers available.
    queue.add('a');
    queue.add('a');
    queue.add('a');
    await jest.advanceTimersByTimeAsync(10);
    expect(runs).toEqual(['a']);
    await jest.advanceTimersByTimeAsync(200);
    expect(runs).toEqual(['a', 'a']);
    expect(overlaps).toBe(0);
    queue.shutDown();
    await workers;
  });

  it('retries a failing key with growing back-off, reports each error, and forgets it on success', async () => {
    const queue = new WorkQueue();
    const attempts: number[] = [];
    const errors: Array<[string, string]> = [];
    const start = Date.now();
    const workers = runWorkers(
      queue,
      1,
      (key) => {
        attempts.push(Date.now() - start);
        if (attempts.length <= 3) throw new Error(`boom ${attempts.length}`);
        expect(queue.numRequeues(key)).toBe(3);
      },
      { onError: (error, key) => errors.push([key, (error as Error).message]) },
    );
    queue.add('Pipeline/ns/p');
    await jest.advanceTimersByTimeAsync(1000);
    // Tries at 0, then after 5, 10 and 20 ms of back-off.
    expect(attempts).toEqual([0, 5, 15, 35]);
    expect(errors).toEqual([
      ['Pipeline/ns/p', 'boom 1'],
      ['Pipeline/ns/p', 'boom 2'],
      ['Pipeline/ns/p', 'boom 3'],
    ]);
    expect(queue.numRequeues('Pipeline/ns/p')).toBe(0);
    queue.shutDown();
    await workers;
  });

  it('keeps working when the handler rejects asynchronously or onError throws', async () => {
    const queue = new WorkQueue({ backoff: { baseDelayMs: 1000 } });
    const handled: string[] = [];
    const workers = runWorkers(
      queue,
      1,
      async (key) => {
        handled.push(key);
        if (key === 'bad') throw new Error('async failure');
      },
      {
        onError: () => {
          throw new Error('reporter failed');
        },
      },
    );
    queue.add('bad');
    queue.add('good');
    await jest.advanceTimersByTimeAsync(0);
    expect(handled).toEqual(['bad', 'good']);
    expect(queue.numRequeues('bad')).toBe(1);
    queue.shutDown();
    await workers;
  });

  it('re-checks a key periodically when the handler asks with requeueAfter', async () => {
    const queue = new WorkQueue();
    const checks: number[] = [];
    const start = Date.now();
    const workers = runWorkers(queue, 2, (): ReconcileResult => {
      checks.push(Date.now() - start);
      return { requeueAfter: 30_000 };
    });
    queue.add('Warehouse/ns/w');
    await jest.advanceTimersByTimeAsync(95_000);
    expect(checks).toEqual([0, 30_000, 60_000, 90_000]);
    // A requeue is scheduled; shutting down clears it.
    expect(jest.getTimerCount()).toBe(1);
    queue.shutDown();
    await workers;
  });

  it('lets an event before the periodic re-check run the key early, once', async () => {
    const queue = new WorkQueue();
    const checks: number[] = [];
    const start = Date.now();
    const workers = runWorkers(queue, 1, () => {
      checks.push(Date.now() - start);
      return checks.length === 1 ? { requeueAfter: 10_000 } : undefined;
    });
    queue.add('k');
    await jest.advanceTimersByTimeAsync(3_000);
    queue.add('k');
    await jest.advanceTimersByTimeAsync(20_000);
    // The scheduled re-check at 10 s still runs: level-triggered handlers are idempotent.
    expect(checks).toEqual([0, 3_000, 10_000]);
    queue.shutDown();
    await workers;
  });

  it('lets a worker finish its key after shutdown, and drain() waits for it', async () => {
    const queue = new WorkQueue();
    let finished = false;
    const workers = runWorkers(queue, 2, async () => {
      await sleep(500);
      finished = true;
    });
    queue.add('slow');
    await jest.advanceTimersByTimeAsync(10);
    const drained = queue.drain();
    expect(await settled(drained)).toBe(false);
    await jest.advanceTimersByTimeAsync(490);
    await drained;
    expect(finished).toBe(true);
    await workers;
  });

  it('rejects a concurrency that is not a positive integer', async () => {
    const queue = new WorkQueue();
    await expect(runWorkers(queue, 0, () => undefined)).rejects.toThrow(RangeError);
    await expect(runWorkers(queue, 1.5, () => undefined)).rejects.toThrow(RangeError);
  });

  it('under random adds, never overlaps a key and processes every key after its last add', async () => {
    for (const seed of [1, 2, 3, 4, 5]) {
      const random = prng(seed);
      const queue = new WorkQueue({ backoff: { baseDelayMs: 1, maxDelayMs: 20 } });
      const keys = ['a', 'b', 'c', 'd', 'e'];
      const active = new Set<string>();
      const lastAdd = new Map<string, number>();
      const lastStart = new Map<string, number>();
      let overlaps = 0;
      let tick = 0;
      const workers = runWorkers(queue, 3, async (key) => {
        if (active.has(key)) overlaps++;
        active.add(key);
        lastStart.set(key, tick);
        await sleep(Math.floor(random() * 5));
        active.delete(key);
        if (random() < 0.2) throw new Error('transient');
        if (random() < 0.1) return { requeueAfter: 3 };
        return undefined;
      });
      for (tick = 1; tick <= 300; tick++) {
        if (random() < 0.6) {
          const key = keys[Math.floor(random() * keys.length)] as string;
          lastAdd.set(key, tick);
          queue.add(key);
        }
        await jest.advanceTimersByTimeAsync(1);
      }
      // Let everything settle: back-off is at most 20 ms.
      await jest.advanceTimersByTimeAsync(200);
      expect(overlaps).toBe(0);
      for (const [key, added] of lastAdd) {
        expect({ key, started: lastStart.get(key) ?? -1 }).toEqual({ key, started: expect.any(Number) });
        expect(lastStart.get(key) as number).toBeGreaterThanOrEqual(added);
      }
      queue.shutDown();
      await workers;
    }
  });
});
