// What the CDC benches (run.js: PostgreSQL, mariadb.js: MariaDB) share:
// waiting for the worker's published counter, timing a floor's program, and
// the cells of their tables.
/* global performance -- Node 24 global */
import { spawn } from 'node:child_process';
import { median, thousands } from '../pipeline/report.js';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Polls the worker's published counter until it reaches `n`; the time it did (performance.now()). */
export const publishedAtLeast = async (worker, n, ms = 300_000) => {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    const m = await worker.metrics().catch(() => null);
    if (m && m.get('sluice_source_messages_total') >= n) return performance.now();
    await sleep(25);
  }
  throw new Error(`the worker published fewer than ${n} events in ${ms} ms`);
};

/** A ratio as a percentage, with a decimal below 10%. */
export const pct = (v) => (v < 0.1 ? `${(v * 100).toFixed(1)}%` : `${Math.round(v * 100)}%`);

/** ` (min–max)` of `values` formatted by `fmt`, or nothing for a single value. */
export const spread = (values, fmt) =>
  values.length > 1 ? ` (${fmt(Math.min(...values))}–${fmt(Math.max(...values))})` : '';

/** `median (min–max)` of `values`. */
export const medianCell = (values, fmt = thousands) => `${fmt(median(values))}${spread(values, fmt)}`;

/** `min–max` of the load averages measured at each round's start and end. */
export const loadCell = (loads) => `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`;

const ms = (v) => `${Math.round(v)}`;

/**
 * `p50 / p99 / max (inserts' p99)` (ms) of the rounds' steady phases, each as
 * `median (min–max)`; empty without one.
 */
export const steadyCell = (steadies) => {
  if (steadies.length === 0) return '';
  const cell = (k) =>
    medianCell(
      steadies.map((s) => s[k]),
      ms,
    );
  return `${['p50', 'p99', 'max'].map(cell).join(' / ')} (inserts' p99 ${cell('insertP99')})`;
};

/** The steady phase of a round, for its log line. */
export const steadyLog = (s) =>
  s
    ? `steady ${thousands(s.rate)} rows/s: p50 ${s.p50} ms, p99 ${s.p99} ms, max ${s.max} ms, ` +
      `inserts' p99 ${s.insertP99.toFixed(0)} ms, `
    : '';

/**
 * Runs `command` to its exit: `{ seconds }` from its start, or a rejection
 * with the end of what it wrote to standard error when it fails; killed
 * after `timeoutMs`.
 */
export const timedRun = (command, args, { env = process.env, timeoutMs = 300_000 } = {}) =>
  new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'], env });
    let err = '';
    child.stderr.on('data', (b) => (err += b));
    child.once('error', reject);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.once('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve({ seconds: (performance.now() - start) / 1000 });
      else reject(new Error(`${command} exited with ${code}: ${err.trim().slice(-300)}`));
    });
  });
