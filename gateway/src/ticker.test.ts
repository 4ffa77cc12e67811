import { describe, expect, it } from '@jest/globals';
import { Ticker } from './ticker.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('Ticker', () => {
  it('never overlaps two ticks, goes on after a failure, and stop waits for the tick running', async () => {
    let running = 0;
    let overlapped = false;
    let ticks = 0;
    let ended = 0;
    const errors: unknown[] = [];
    const ticker = new Ticker(
      async () => {
        ticks += 1;
        running += 1;
        if (running > 1) overlapped = true;
        await sleep(15); // longer than the interval
        running -= 1;
        ended += 1;
        if (ticks === 2) throw new Error('boom');
      },
      (err) => errors.push(err),
    ).start(1);
    while (ticks < 4) await sleep(5);
    await ticker.stop();
    const after = ticks;
    expect(ended).toBe(ticks); // the tick running at stop() has ended
    await sleep(30);
    expect(ticks).toBe(after); // and none started since
    expect(overlapped).toBe(false);
    expect(errors).toEqual([new Error('boom')]);
    expect(ticker.stopped).toBe(true);
  });

  it('waits firstDelayMs before the first tick', async () => {
    let ticks = 0;
    const ticker = new Ticker(
      async () => void (ticks += 1),
      () => undefined,
    ).start(1000, 40);
    await sleep(10);
    expect(ticks).toBe(0);
    await sleep(80);
    expect(ticks).toBe(1);
    await ticker.stop();
  });
});
