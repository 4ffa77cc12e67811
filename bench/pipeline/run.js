// Pipeline benchmark: the real worker program moving the three
// message shapes of the mapper bench Kafka → mapper → Kafka and Kafka →
// PostgreSQL, against ceilings measured in the same run on the same broker and
// server (ceiling.js). Usage (the npm script starts PostgreSQL and a broker):
//   npm run build && npm run bench:pipeline [-- --messages 20000 --shapes flat,wide --targets kafka]
//
// One case = one shape × one target × one mapping (identity: no rules; rules:
// the mapper bench's rule set). For each case, N messages are preloaded into a
// fresh source topic, then the worker (or the ceiling loop) starts with a new
// consumer group from the beginning:
//   - msg/s: N / (time from /readyz = 200 until messages_out_total reaches N),
//     i.e. until every message was written to the target and committed;
//   - latency: then L more messages are produced at a steady rate (half the
//     measured throughput, at most 1,000 msg/s) and p50/p99 are read from the
//     worker's own histogram (Kafka timestamp → target confirmed), the
//     difference of two /metrics snapshots, interpolated inside buckets;
//   - peak RSS: the worker's VmHWM just before it is stopped.
/* global performance -- Node 24 global */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Admin, Producer, ProduceAcks, stringSerializers } from '@platformatic/kafka';
import { DEFAULT_WORKER_NODE_OPTIONS } from '@sluice/shared/ports';
import { SHAPES, rng } from '../mapper/shapes.js';
import { runJsonChild } from './child.js';
import { committedIn, groupSpread, messagesIn } from './kafka.js';
import { histogramQuantile, startWorkers } from './worker.js';
import { median, option, table, thousands } from './report.js';

const N = Number(option('--messages', process.env.BENCH_MESSAGES ?? '20000'));
const LATENCY_MESSAGES = Number(option('--latency-messages', '1000'));
const ROUNDS = Number(option('--rounds', process.env.BENCH_ROUNDS ?? '1'));
const ONLY_SHAPES = option('--shapes', 'flat,nested,wide').split(',');
const TARGETS = option('--targets', 'kafka,postgres').split(',');
const MAPPINGS = option('--mappings', 'identity,rules').split(',');
// Workers of the target (a connector's spec.replicas): one consumer group sharing the source topic's partitions.
const TARGET_REPLICAS = Number(option('--target-replicas', '1'));
// Partitions of each source topic: the most workers that get a share.
const PARTITIONS = Number(option('--partitions', '3'));
// The worker's SLUICE_BATCH_SIZE (messages per batch); unset: the worker's default (500).
const WORKER_BATCH = option('--worker-batch-size', null);
// NODE_OPTIONS of the worker: by default what the worker runtimes give it
// (DEFAULT_WORKER_NODE_OPTIONS); "" for Node's defaults.
const WORKER_NODE_OPTIONS = option('--worker-node-options', DEFAULT_WORKER_NODE_OPTIONS);
const WORKER_ENV = {
  ...(WORKER_BATCH ? { SLUICE_BATCH_SIZE: WORKER_BATCH } : {}),
  ...(WORKER_NODE_OPTIONS ? { NODE_OPTIONS: WORKER_NODE_OPTIONS } : {}),
};
const MEMORY_GOAL_MIB = 256;
const GOALS = { kafka: { identity: 0.7, rules: 0.5 }, postgres: { identity: 0.8, rules: 0.8 } };

const brokers = (process.env.SLUICE_TEST_KAFKA_BROKERS ?? '').split(',').filter(Boolean);
const databaseUrl = process.env.SLUICE_TEST_DATABASE_URL;
if (brokers.length === 0 || (TARGETS.includes('postgres') && !databaseUrl)) {
  console.error(
    'No broker or database: run through `npm run bench:pipeline` (scripts/with-postgres.sh, with-kafka.sh).',
  );
  process.exit(1);
}
const run = Math.random().toString(36).slice(2, 8);
let named = 0; // numbers every topic and table of the run: each case and round gets fresh ones
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.error(...a);

const admin = new Admin({ clientId: 'bench-admin', bootstrapBrokers: brokers });
const producer = new Producer({
  clientId: 'bench-producer',
  bootstrapBrokers: brokers,
  idempotent: true,
  acks: ProduceAcks.ALL,
  serializers: stringSerializers,
});

const messagesOf = (shape, from, count) => {
  const r = rng(42 + from);
  return Array.from({ length: count }, (_, k) => JSON.stringify(shape.message(r, from + k)));
};

const preload = async (topic, values) => {
  await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 });
  for (let i = 0; i < values.length; i += 1000) {
    await producer.send({ messages: values.slice(i, i + 1000).map((value) => ({ topic, value })) });
  }
};

/** Produces `values` at `rate` msg/s, in a send every 10 ms. */
const paced = async (topic, values, rate) => {
  const perTick = Math.max(1, Math.round(rate / 100));
  const start = performance.now();
  for (let i = 0; i < values.length; i += perTick) {
    const due = start + (i / rate) * 1000;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    await producer.send({ messages: values.slice(i, i + perTick).map((value) => ({ topic, value })) });
  }
};

// --- PostgreSQL ---------------------------------------------------------------------

let pgAdmin;
let database;
const openDatabase = async () => {
  const url = new URL(databaseUrl);
  database = `sluice_bench_${run}`;
  pgAdmin = new pg.Client({ connectionString: databaseUrl });
  await pgAdmin.connect();
  await pgAdmin.query(`create database ${database}`);
  url.pathname = `/${database}`;
  return {
    url: url.toString(),
    settings: {
      host: url.hostname,
      port: Number(url.port || 5432),
      database,
      user: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
      ssl_mode: 'disable',
      schema: 'public',
    },
  };
};

const countRows = async (url, table) => {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return Number((await c.query(`select count(*) as n from "${table}"`)).rows[0].n);
  } finally {
    await c.end();
  }
};

// --- one case ---------------------------------------------------------------------

const workerConfig = (source, target, out, rules, db) => ({
  connector_id: `bench-${out}`,
  connector_type: target === 'kafka' ? 'KAFKA_TARGET' : 'POSTGRES_TARGET',
  role: 'target',
  configuration: target === 'kafka' ? { bootstrap_server: brokers.join(',') } : db.settings,
  subscriptions: [
    {
      id: `sub-${out}`,
      datamodel_id: `dm-${out}`,
      topic: source,
      stream: { kind: 'kafka', bootstrap_servers: brokers.join(','), include_metadata: false },
      target_table_name: out,
      mapper_config: rules,
      consumer_id: `bench-${out}`,
      enabled: true,
      backfill: true,
      error_table: { enabled: false },
    },
  ],
});

const runWorkerCase = async ({ shape, target, mapping, db }) => {
  const id = `${run}_${++named}`;
  const out = `${target === 'kafka' ? 'out' : 'pg'}_${shape.id}_${mapping}_${id}`;
  const source = `src-${shape.id}-${target}-${mapping}-${id}`;
  const rules = mapping === 'identity' ? [] : shape.rules;
  await preload(source, messagesOf(shape, 0, N));
  const load = loadavg()[0];
  const worker = await startWorkers(
    workerConfig(source, target, out, rules, db),
    WORKER_ENV,
    TARGET_REPLICAS,
  );
  try {
    await worker.ready();
    const group = `bench-${out}`;
    let start;
    let end;
    let from = 0;
    if (TARGET_REPLICAS === 1) {
      start = performance.now();
      end = await worker.outAtLeast(N);
    } else {
      // Counted once the group holds every worker (the joins' rebalances are over), from
      // what the group had committed then: its committed offsets, which replays do not inflate.
      await until(() => groupSpread(admin, group, source, TARGET_REPLICAS), 60_000);
      start = performance.now();
      from = await committedIn(admin, group, source);
      await until(async () => (await committedIn(admin, group, source)) >= N, 300_000);
      end = performance.now();
    }
    const rate = (N - from) / ((end - start) / 1000);
    // Latency at a steady load well under the throughput, not while draining a backlog.
    const before = (await worker.metrics()).buckets;
    const steady = Math.min(1000, rate / 2);
    await paced(source, messagesOf(shape, N, LATENCY_MESSAGES), steady);
    if (TARGET_REPLICAS === 1) await worker.outAtLeast(N + LATENCY_MESSAGES, 120_000);
    else await until(async () => (await committedIn(admin, group, source)) >= N + LATENCY_MESSAGES, 120_000);
    const after = (await worker.metrics()).buckets;
    const rss = worker.peakRssMiB();
    const written =
      target === 'kafka'
        ? await topicSize(out)
        : await countRows(db.url, out).catch((e) => `? (${e.message})`);
    return {
      rate,
      p50: histogramQuantile(before, after, 0.5) * 1000,
      p99: histogramQuantile(before, after, 0.99) * 1000,
      steady,
      rss,
      written,
      load,
      counted: N - from,
    };
  } finally {
    await worker.stop();
  }
};

const topicSize = (topic) => messagesIn(admin, topic);

/** Polls `test` every 25 ms until it holds; throws after `ms`. */
const until = async (test, ms) => {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`not reached in ${ms} ms`);
    await sleep(25);
  }
};

const runCeiling = async ({ shape, target, mapping, db }) => {
  const id = `${run}_${++named}`;
  const source = `src-${shape.id}-${target}-${mapping}-ceiling-${id}`;
  const out = `ceil_${shape.id}_${target}_${mapping}_${id}`;
  await preload(source, messagesOf(shape, 0, N));
  const load = loadavg()[0];
  const options =
    target === 'kafka'
      ? { brokers, topic: source, n: N, out }
      : {
          brokers,
          topic: source,
          n: N,
          databaseUrl: db.url,
          table: out,
          rules: mapping === 'identity' ? [] : shape.rules,
        };
  const result = await runJsonChild(
    fileURLToPath(new URL('./ceiling.js', import.meta.url)),
    [target, JSON.stringify(options)],
    {
      label: `the ${target} ceiling`,
    },
  );
  return { rate: N / result.seconds, rss: result.peakRssMiB, load };
};

// --- main -----------------------------------------------------------------------

const fmtMs = (v) => (Number.isFinite(v) ? `${v.toFixed(v < 10 ? 1 : 0)}` : '—');
const db = TARGETS.includes('postgres') ? await openDatabase() : null;
const tryOrReason = async (fn) => {
  try {
    return await fn();
  } catch (e) {
    return { error: e.message.slice(0, 300) };
  }
};
// case key → { shape, target, mapping, rounds: [{ worker, ceiling }] }
const cases = new Map();
try {
  // Warm-up, not counted: a fresh broker (JIT, page cache) would otherwise charge the first case.
  await runCeiling({ shape: SHAPES[0], target: 'kafka', mapping: 'warmup', db });
  for (let round = 1; round <= ROUNDS; round++) {
    for (const shape of SHAPES.filter((s) => ONLY_SHAPES.includes(s.id))) {
      for (const target of TARGETS) {
        // The ceiling differs by mapping only for PostgreSQL (the loader maps); the Kafka loop forwards bytes.
        const ceilings = {};
        for (const mapping of MAPPINGS) {
          const ceilingKey = target === 'kafka' ? 'bytes' : mapping;
          if (!ceilings[ceilingKey]) {
            ceilings[ceilingKey] = await tryOrReason(() => runCeiling({ shape, target, mapping, db }));
            const c = ceilings[ceilingKey];
            log(
              `[${round}] ${shape.id} → ${target} ceiling (${ceilingKey}):`,
              c.error ?? `${thousands(c.rate)} msg/s`,
            );
          }
          const ceiling = ceilings[ceilingKey];
          const worker = await tryOrReason(() => runWorkerCase({ shape, target, mapping, db }));
          log(
            `[${round}] ${shape.id} → ${target} ${mapping}:`,
            worker.error ??
              `${thousands(worker.rate)} msg/s, p50 ${fmtMs(worker.p50)} ms, p99 ${fmtMs(worker.p99)} ms, peak RSS ${worker.rss.toFixed(0)} MiB, written ${worker.written}, timed over ${worker.counted} messages, load ${worker.load.toFixed(1)}`,
          );
          const key = `${shape.id}/${target}/${mapping}`;
          if (!cases.has(key)) cases.set(key, { shape: shape.id, target, mapping, rounds: [] });
          cases.get(key).rounds.push({ worker, ceiling });
        }
      }
    }
  }
} finally {
  await producer.close();
  await admin.close();
  if (db) {
    await pgAdmin.query(`drop database if exists ${database} with (force)`).catch(() => undefined);
    await pgAdmin.end();
  }
}

/** Medians over the rounds that succeeded; the first error when none did. */
const summarize = (rounds, side) => {
  const ok = rounds.map((r) => r[side]).filter((r) => !r.error);
  if (ok.length === 0) return { error: rounds[0][side].error };
  const of = (key) => median(ok.map((r) => r[key]).filter((v) => v !== undefined));
  return {
    rate: of('rate'),
    p50: of('p50'),
    p99: of('p99'),
    rss: Math.max(...ok.map((r) => r.rss)),
    load: ok.map((r) => r.load),
    failed: rounds.length - ok.length,
  };
};

const results = [...cases.values()].map((c) => {
  const ratios = c.rounds
    .filter((r) => !r.worker.error && !r.ceiling.error)
    .map((r) => r.worker.rate / r.ceiling.rate);
  return {
    ...c,
    worker: summarize(c.rounds, 'worker'),
    ceiling: summarize(c.rounds, 'ceiling'),
    ratio: median(ratios),
    ratioRange:
      ratios.length > 1
        ? ` (${Math.round(Math.min(...ratios) * 100)}–${Math.round(Math.max(...ratios) * 100)}%)`
        : '',
  };
});

const rows = results.map(({ shape, target, mapping, worker, ceiling, ratio, ratioRange }) => {
  const goal = GOALS[target][mapping];
  const verdict = Number.isFinite(ratio) ? (ratio >= goal ? 'met' : '**missed**') : '—';
  const loads = [...(worker.load ?? []), ...(ceiling.load ?? [])];
  return [
    shape,
    target === 'kafka' ? 'Kafka → Kafka' : 'Kafka → PostgreSQL',
    mapping,
    worker.error
      ? `failed: ${worker.error}`
      : `${thousands(worker.rate)}${worker.failed ? ` (${worker.failed} round(s) failed)` : ''}`,
    `${fmtMs(worker.p50)} / ${fmtMs(worker.p99)}`,
    ceiling.error ? `failed: ${ceiling.error}` : thousands(ceiling.rate),
    Number.isFinite(ratio) ? `${Math.round(ratio * 100)}%${ratioRange}` : '—',
    `≥ ${goal * 100}%: ${verdict}`,
    worker.rss ? `${worker.rss.toFixed(0)} MiB${worker.rss > MEMORY_GOAL_MIB ? ' (over 256)' : ''}` : '—',
    loads.length ? `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}` : '—',
  ];
});
console.log(
  `\nPipeline: ${thousands(N)} preloaded messages per case (${PARTITIONS} partitions), ${TARGET_REPLICAS} target worker(s), medians of ${ROUNDS} round(s) (peak RSS: the largest), latency from ${LATENCY_MESSAGES} more at half the measured rate (≤ 1,000 msg/s), worker batch size ${WORKER_BATCH ?? 'default (500)'}, worker NODE_OPTIONS ${WORKER_NODE_OPTIONS || "none (Node's defaults)"}\n`,
);
console.log(
  table(
    [
      'Shape',
      'Path',
      'Mapping',
      'worker msg/s',
      'p50 / p99 ms',
      'ceiling msg/s',
      'worker / ceiling',
      'goal',
      'worker peak RSS',
      'load avg',
    ],
    rows,
  ),
);
if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify({ n: N, results }, null, 2));
process.exit(0);
