import { describe, expect, it } from '@jest/globals';
import { backoffTiming, CrashBackoff, KUBELET_BACKOFF } from './backoff.js';

describe('CrashBackoff (kubelet numbers)', () => {
  it('restarts at once, then waits 10 s, 20 s, 40 s … capped at 5 min', () => {
    const b = new CrashBackoff(KUBELET_BACKOFF);
    const delays = Array.from({ length: 9 }, () => b.next(0) / 1000);
    expect(delays).toEqual([0, 10, 20, 40, 80, 160, 300, 300, 300]);
  });

  it('starts over after a run that was ready for 10 min, not after a shorter one', () => {
    const b = new CrashBackoff(KUBELET_BACKOFF);
    b.next(0);
    b.next(0);
    expect(b.next(599_999)).toBe(20_000);
    expect(b.next(600_000)).toBe(0);
    expect(b.next(0)).toBe(10_000);
  });

  it('takes its base from SLUICE_WORKER_BACKOFF_BASE_MS, keeping the proportions', () => {
    expect(backoffTiming({})).toEqual(KUBELET_BACKOFF);
    expect(backoffTiming({ SLUICE_WORKER_BACKOFF_BASE_MS: '100' })).toEqual({
      baseMs: 100,
      maxMs: 3000,
      resetAfterMs: 6000,
    });
    expect(() => backoffTiming({ SLUICE_WORKER_BACKOFF_BASE_MS: '-1' })).toThrow(/positive integer/);
  });
});
