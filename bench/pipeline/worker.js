// The real worker program (dataplane/dist/main.js) as a child process,
// the way the operator's process runtime starts it: a configuration file, a
// port for /readyz and /metrics. What the bench reads of it: readiness, the
// counters and the latency histogram of /metrics, and its peak resident memory.
/* global fetch, performance -- Node 24 globals */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const WORKER_PROGRAM = fileURLToPath(new URL('../../dataplane/dist/main.js', import.meta.url));

const freePort = () =>
  new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Sums of every sample of /metrics by metric name (labels folded), histogram buckets by `le`. */
export const parseMetrics = (text) => {
  const sums = new Map();
  const buckets = new Map();
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)$/.exec(line);
    if (!m) continue;
    const [, name, labels = '', value] = m;
    sums.set(name, (sums.get(name) ?? 0) + Number(value));
    const le = /le="([^"]+)"/.exec(labels);
    if (le && name.endsWith('_bucket')) {
      const bound = le[1] === '+Inf' ? Infinity : Number(le[1]);
      buckets.set(bound, (buckets.get(bound) ?? 0) + Number(value));
    }
  }
  return { get: (name) => sums.get(name) ?? 0, buckets };
};

/**
 * A quantile of the observations between two snapshots of a cumulative
 * histogram, interpolated linearly inside the bucket (as Prometheus's
 * histogram_quantile does), in seconds.
 */
export const histogramQuantile = (before, after, q) => {
  const bounds = [...after.keys()].sort((a, b) => a - b);
  const counts = bounds.map((b) => after.get(b) - (before.get(b) ?? 0));
  const total = counts[counts.length - 1];
  if (!total) return NaN;
  const rank = q * total;
  for (let i = 0; i < bounds.length; i++) {
    if (counts[i] >= rank) {
      const lower = i === 0 ? 0 : bounds[i - 1];
      const below = i === 0 ? 0 : counts[i - 1];
      if (bounds[i] === Infinity) return lower;
      return lower + ((bounds[i] - lower) * (rank - below)) / Math.max(1, counts[i] - below);
    }
  }
  return NaN;
};

/** Peak resident set of a running process (VmHWM), MiB. */
export const peakRssMiB = (pid) => {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};

export const startWorker = async (config, env = {}) => {
  if (!existsSync(WORKER_PROGRAM)) throw new Error(`${WORKER_PROGRAM} is missing: run npm run build first`);
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-worker-'));
  const configPath = join(dir, 'config.json');
  writeFileSync(configPath, JSON.stringify(config), { mode: 0o600 });
  const port = await freePort();
  const child = spawn(process.execPath, [WORKER_PROGRAM], {
    env: {
      PATH: process.env.PATH ?? '',
      SLUICE_WORKER_ID: 'bench/worker',
      SLUICE_WORKER_CONFIG: configPath,
      SLUICE_WORKER_PORT: String(port),
      SLUICE_TERMINATION_MESSAGE_PATH: join(dir, 'termination-message'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (b) => (output = (output + b).slice(-20_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  let exited = false;
  const exit = new Promise((r) => child.once('exit', (code) => ((exited = true), r(code))));
  const reason = () => {
    try {
      return readFileSync(join(dir, 'termination-message'), 'utf8');
    } catch {
      return output.trim().split('\n').slice(-3).join(' | ');
    }
  };
  const worker = {
    pid: child.pid,
    async metrics() {
      return parseMetrics(await (await fetch(`http://127.0.0.1:${port}/metrics`)).text());
    },
    /** Resolves once /readyz answers 200; throws with the worker's reason if it exits first. */
    async ready(ms = 60_000) {
      const deadline = Date.now() + ms;
      while (Date.now() < deadline) {
        if (exited) throw new Error(`the worker exited: ${reason()}`);
        const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then(
          (r) => r.status === 200,
          () => false,
        );
        if (ok) return;
        await sleep(20);
      }
      throw new Error(`the worker was not ready after ${ms} ms`);
    },
    /** Polls messages_out_total every `everyMs` until it reaches `n`; the time it did (performance.now()). */
    async outAtLeast(n, ms = 300_000, everyMs = 25) {
      const deadline = Date.now() + ms;
      while (Date.now() < deadline) {
        if (exited) throw new Error(`the worker exited: ${reason()}`);
        const m = await worker.metrics().catch(() => null); // null: exiting; the next turn says why
        if (m && m.get('sluice_worker_messages_out_total') >= n) return performance.now();
        await sleep(everyMs);
      }
      throw new Error(`the worker confirmed fewer than ${n} messages in ${ms} ms`);
    },
    peakRssMiB: () => peakRssMiB(child.pid),
    async stop() {
      if (!exited) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exit;
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return worker;
};

/**
 * `n` workers of one configuration (a target scaled to n replicas, as the
 * process runtime runs it): one consumer group sharing the topic's
 * partitions. Read as one worker: counters and histogram buckets added up
 * over the instances, ready when all are, the largest peak RSS.
 */
export const startWorkers = async (config, env, n) => {
  const workers = [];
  try {
    for (let i = 0; i < n; i++) workers.push(await startWorker(config, env));
  } catch (e) {
    await Promise.all(workers.map((w) => w.stop()));
    throw e;
  }
  if (n === 1) return workers[0];
  const group = {
    async metrics() {
      const all = await Promise.all(workers.map((w) => w.metrics()));
      const buckets = new Map();
      for (const m of all) for (const [le, v] of m.buckets) buckets.set(le, (buckets.get(le) ?? 0) + v);
      return { get: (name) => all.reduce((sum, m) => sum + m.get(name), 0), buckets };
    },
    ready: (ms) => Promise.all(workers.map((w) => w.ready(ms))).then(() => undefined),
    async outAtLeast(target, ms = 300_000, everyMs = 25) {
      const deadline = Date.now() + ms;
      while (Date.now() < deadline) {
        const m = await group.metrics().catch(() => null);
        if (m && m.get('sluice_worker_messages_out_total') >= target) return performance.now();
        await sleep(everyMs);
      }
      throw new Error(`the ${n} workers confirmed fewer than ${target} messages in ${ms} ms`);
    },
    peakRssMiB: () => Math.max(...workers.map((w) => w.peakRssMiB())),
    stop: () => Promise.all(workers.map((w) => w.stop())).then(() => undefined),
  };
  return group;
};
