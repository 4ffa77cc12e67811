// Latency at a steady rate, for both CDC benches: rows written into a
// captured table at a fixed rate while the worker runs, each event's latency
// from the moment its row's insert was sent to the broker's append of the
// event. The topic is created with LogAppendTime, so each message's timestamp
// is the broker's (with one replica and acks=all, the broker acknowledges at
// the append); one clock, the machine's.
/* global performance -- Node 24 global */
import { openEarliestStream } from '../pipeline/kafka.js';
import { publishedAtLeast } from './measure.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** The topic configuration that makes each message's timestamp the broker's append time. */
export const APPEND_TIME = [{ name: 'message.timestamp.type', value: 'LogAppendTime' }];

/**
 * `count` rows with ids from 1 through `insert(from, n)` (one transaction of
 * `n` rows) at `rate` rows/s, a transaction every 10 ms; then waits until the
 * worker published `published` + `count` events and reads them back from
 * `topic`: `{ rate, p50, p99, max, insertP99 }` (ms; rate: rows/s as written;
 * insertP99: how long the insert statements themselves took, their commit
 * included, which the latencies include too).
 */
export const steadyLatency = async ({ worker, brokers, topic, published, count, rate, insert }) => {
  const perTick = Math.max(1, Math.round(rate / 100));
  const sent = new Map();
  const took = [];
  const start = performance.now();
  for (let at = 1; at <= count; at += perTick) {
    const wait = start + ((at - 1) / rate) * 1000 - performance.now();
    if (wait > 0) await sleep(wait);
    sent.set(at, Date.now());
    const t = performance.now();
    await insert(at, Math.min(perTick, count + 1 - at));
    took.push(performance.now() - t);
  }
  const seconds = (performance.now() - start) / 1000;
  await publishedAtLeast(worker, published + count, 120_000);
  const { stream, close } = await openEarliestStream({ brokers, topic, clientId: 'bench-cdc-latency' });
  const ms = [];
  try {
    for await (const m of stream) {
      const id = Number(JSON.parse(m.value.toString()).after.id);
      ms.push(Number(m.timestamp) - sent.get(1 + Math.floor((id - 1) / perTick) * perTick));
      if (ms.length >= count) break;
    }
  } finally {
    await close();
  }
  const quantile = (values, q) => {
    const sorted = [...values].sort((a, b) => a - b);
    return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  };
  return {
    rate: count / seconds,
    p50: quantile(ms, 0.5),
    p99: quantile(ms, 0.99),
    max: Math.max(...ms),
    insertP99: quantile(took, 0.99),
  };
};
