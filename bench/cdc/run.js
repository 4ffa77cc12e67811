// PostgreSQL CDC benchmark: the real worker program's POSTGRES_SOURCE engine
// (logical replication with pgoutput → ChangeEvents on the real broker)
// against the server's own logical decoding of the same WAL (floor.js).
// Usage (the npm script starts PostgreSQL and a broker):
//   npm run build && npm run bench:cdc [-- --rows 100000 --rounds 3 --cases bulk,single]
//
// One case = N rows inserted into a captured table, in transactions of
// `--per-transaction` rows (bulk) or of one row (single, commit-heavy). For
// each case and round:
//   1. the worker starts once on the empty table (it creates its publication
//      and slot and completes its initial snapshot, as a new connector does)
//      and is stopped; two more slots for the floors are created;
//   2. the N rows are written while no one streams: they are in the WAL before
//      the measured worker starts, so the figures are the source's, not the
//      inserts';
//   3. the floors decode the same WAL (SQL decode, then pg_recvlogical), then
//      the worker starts again on its slot:
//      events/s = N / (time from /readyz = 200 until
//      sluice_source_messages_total reaches N), i.e. every change published
//      and acknowledged by the broker (idempotent, acks=all), polled every
//      25 ms; the same from the process start is shown too;
//   4. checks, not timed: the topic holds N messages, and the slot's
//      confirmed position reaches the last commit (the worker acknowledged it
//      to the server); the SQL decode runs a second time and the floor is the
//      mean of both.
/* global performance -- Node 24 global */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import pg from 'pg';
import { Admin } from '@platformatic/kafka';
import { DEFAULT_WORKER_NODE_OPTIONS } from '@sluice/shared/ports';
import { messagesIn } from '../pipeline/kafka.js';
import { startWorker } from '../pipeline/worker.js';
import { median, option, table, thousands } from '../pipeline/report.js';
import { peekDecode, recvLogical } from './floor.js';
import { loadCell, medianCell, pct, publishedAtLeast, steadyCell, steadyLog } from './measure.js';
import { benchServers, workerEnv } from './servers.js';
import { APPEND_TIME, steadyLatency } from './steady.js';

const ROWS = Number(option('--rows', process.env.BENCH_ROWS ?? '100000'));
const SINGLE_ROWS = Number(option('--single-rows', '50000'));
const PER_TRANSACTION = Number(option('--per-transaction', '1000'));
const ROUNDS = Number(option('--rounds', process.env.BENCH_ROUNDS ?? '1'));
const CASES = option('--cases', 'bulk,single').split(',');
const WARMUP_ROWS = Number(option('--warmup-rows', '10000'));
const WORKER_NODE_OPTIONS = option('--worker-node-options', DEFAULT_WORKER_NODE_OPTIONS);
const ROW_SIZE = option('--row-size', '200');
const STEADY_ROWS = Number(option('--steady-rows', '10000'));
const STEADY_RATE = Number(option('--steady-rate', '1000'));

// The rows: `--row-size 200` (the default) about 200 bytes of values each, text of 32 to 128
// characters, numeric and jsonb; `--row-size 120` about 120 bytes, the MariaDB bench's row (a text
// of 39–44 characters and a jsonb of about 55 bytes).
const ROW_VALUES = {
  200: {
    label: `'#' || g || ' ' || repeat(md5(g::text), 1 + g % 4)`,
    doc: `jsonb_build_object('n', g, 'tags', jsonb_build_array('t' || g % 17, 't' || g % 5), 'text', md5(g::text))`,
  },
  120: {
    label: `'#' || g || ' ' || md5(g::text)`,
    doc: `jsonb_build_object('n', g, 'tags', jsonb_build_array('t' || g % 17, 't' || g % 5), 't', left(md5(g::text), 12))`,
  },
}[ROW_SIZE];
if (!ROW_VALUES) {
  console.error(`--row-size is 200 or 120, not ${ROW_SIZE}`);
  process.exit(64);
}

const { brokers, url: databaseUrl } = benchServers(
  'SLUICE_TEST_DATABASE_URL',
  '`npm run bench:cdc` (scripts/with-postgres.sh, with-kafka.sh)',
);
const run = Math.random().toString(36).slice(2, 8);
let named = 0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.error(...a);

const admin = new Admin({ clientId: 'bench-admin', bootstrapBrokers: brokers });

// --- the database -----------------------------------------------------------------

const database = `sluice_bench_cdc_${run}`;
const serverClient = new pg.Client({ connectionString: databaseUrl });
await serverClient.connect();
await serverClient.query(`create database ${database}`);
const dbUrl = new URL(databaseUrl);
dbUrl.pathname = `/${database}`;
const settings = {
  host: dbUrl.hostname,
  port: Number(dbUrl.port || 5432),
  database,
  user: decodeURIComponent(dbUrl.username),
  password: decodeURIComponent(dbUrl.password),
  ssl_mode: 'disable',
};
const db = new pg.Client({ connectionString: dbUrl.toString() });
await db.connect();
// Writes to an unpublished table move the server's WAL past a position, so a
// source or pg_recvlogical waiting at the end of the captured changes sees it.
await db.query('create table public.bench_tick (at timestamptz default now())');
const tick = () => db.query('insert into public.bench_tick default values');
/**
 * The WAL flushed up to `lsn`: logical decoding reads only flushed WAL, and the
 * test server commits with synchronous_commit=off, so the floors would
 * otherwise wait for the WAL writer, or stop short of the last commits.
 */
const flushedTo = async (lsn) => {
  await db.query('begin');
  await db.query('set local synchronous_commit = on');
  await tick();
  await db.query('commit');
  const { rows } = await db.query('select pg_current_wal_flush_lsn() >= $1::pg_lsn as ok', [lsn]);
  if (!rows[0].ok) throw new Error(`the WAL is not flushed to ${lsn}`);
};

const walInsertLsn = async () =>
  (await db.query('select pg_current_wal_insert_lsn()::text as lsn')).rows[0].lsn;
const lsnValue = (text) => {
  const [hi, lo] = text.split('/');
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
};

const ROW_SQL = (table, g) => `insert into ${table} (id, version, label, amount, doc)
  select g, 0, ${ROW_VALUES.label}, (g * 37 % 10000000) / 100.0, ${ROW_VALUES.doc}
    from ${g}`;

/** `rows` rows in transactions of `perTransaction` (1: one transaction per row, written by the server). */
const insertRows = async (table, rows, perTransaction) => {
  if (perTransaction === 1) {
    // One statement sent; the server commits each row on its own (transaction control inside DO).
    await db.query(`do $$ begin
      for i in 1..${rows} loop
        ${ROW_SQL(table, '(select i as g) s')};
        commit;
      end loop; end $$`);
    return;
  }
  for (let from = 1; from <= rows; from += perTransaction) {
    const to = Math.min(rows, from + perTransaction - 1);
    await db.query(ROW_SQL(table, `generate_series(${from}, ${to}) g`));
  }
};

const slotConfirmed = async (slot) => {
  const { rows } = await db.query(
    'select confirmed_flush_lsn::text as lsn from pg_replication_slots where slot_name = $1',
    [slot],
  );
  return rows[0]?.lsn ? lsnValue(rows[0].lsn) : 0n;
};

// --- the broker -------------------------------------------------------------------

const topicSize = (topic) => messagesIn(admin, topic);

// --- one case ---------------------------------------------------------------------

const sourceConfig = (id, tables, topics) => ({
  connector_id: `bench-cdc-${id}`,
  connector_type: 'POSTGRES_SOURCE',
  role: 'source',
  configuration: {
    ...settings,
    whitelist: tables.map((t) => `public.${t}`),
    slot_name: `bench_${id}`,
    publication_name: `bench_${id}`,
  },
  datamodels: tables.map((t, i) => ({
    id: `dm-${i}-${id}`,
    name: t,
    entry: `public.${t}`,
    enabled: true,
    topic: topics[i],
  })),
});
const WORKER_ENV = workerEnv(brokers, WORKER_NODE_OPTIONS);

const runCase = async (rows, perTransaction, steadyRows) => {
  const id = `${run}_${++named}`;
  const table = `cdc_${id}`;
  const topic = `bench-cdc-${id}`;
  // The steady phase's rows go to a table of their own, whose topic keeps the broker's append times.
  const steadyTable = `steady_${id}`;
  const steadyTopic = `bench-cdc-steady-${id}`;
  const config = sourceConfig(id, [table, steadyTable], [topic, steadyTopic]);
  const { slot_name: slot, publication_name: publication } = config.configuration;
  const floorSlot = `${slot}_decode`;
  const recvSlot = `${slot}_recv`;
  for (const t of [table, steadyTable]) {
    await db.query(
      `create table public.${t} (id int primary key, version int not null, label text not null,
         amount numeric(12,2) not null, doc jsonb not null)`,
    );
  }
  await admin.createTopics({ topics: [topic], partitions: 3, replicas: 1 });
  await admin.createTopics({ topics: [steadyTopic], partitions: 3, replicas: 1, configs: APPEND_TIME });
  try {
    // 1. The connector's first start: publication, slot, snapshot (of an empty table).
    const prime = await startWorker(config, WORKER_ENV);
    try {
      await prime.ready();
    } finally {
      await prime.stop();
    }
    for (const s of [floorSlot, recvSlot]) {
      await db.query(`select pg_create_logical_replication_slot($1, 'pgoutput')`, [s]);
    }
    // 2. The changes, in the WAL before anyone streams them.
    const t0 = performance.now();
    await insertRows(table, rows, perTransaction);
    const insertSeconds = (performance.now() - t0) / 1000;
    const endLsn = await walInsertLsn();
    await flushedTo(endLsn);
    const load = loadavg()[0];
    // 3. Floors, then the worker.
    const decode1 = await peekDecode(db, { slot: floorSlot, publication, endLsn });
    const recv = await recvLogical({ databaseUrl: dbUrl.toString(), slot: recvSlot, publication, endLsn });
    const spawned = performance.now();
    const worker = await startWorker(config, WORKER_ENV);
    let result;
    try {
      await worker.ready();
      const ready = performance.now();
      const end = await publishedAtLeast(worker, rows);
      const rss = worker.peakRssMiB();
      // 4. Checks: the server saw every commit acknowledged; the broker holds every event once.
      const deadline = Date.now() + 60_000;
      while ((await slotConfirmed(slot)) < lsnValue(endLsn)) {
        if (Date.now() > deadline) throw new Error(`slot ${slot} never confirmed ${endLsn}`);
        await tick();
        await sleep(100);
      }
      // 5. Latency at a steady rate, the same worker running. Its commits flush the WAL, as a
      // server's default does (the test server's synchronous_commit=off leaves them to the WAL
      // writer, up to wal_writer_delay later, and logical decoding reads only flushed WAL).
      if (steadyRows > 0) await db.query('set synchronous_commit = on');
      const steady =
        steadyRows > 0
          ? await steadyLatency({
              worker,
              brokers,
              topic: steadyTopic,
              published: rows,
              count: steadyRows,
              rate: STEADY_RATE,
              insert: (from, n) =>
                db.query(ROW_SQL(steadyTable, `generate_series(${from}, ${from + n - 1}) g`)),
            })
          : null;
      await db.query('reset synchronous_commit');
      result = {
        rate: rows / ((end - ready) / 1000),
        rateFromStart: rows / ((end - spawned) / 1000),
        rss: Math.max(rss, worker.peakRssMiB()),
        steady,
        written: await topicSize(topic),
      };
    } finally {
      await worker.stop();
    }
    const decode2 = await peekDecode(db, { slot: floorSlot, publication, endLsn });
    const decodeSeconds = (decode1.seconds + decode2.seconds) / 2;
    return {
      ...result,
      decodeRate: rows / decodeSeconds,
      decodeMessages: decode1.messages,
      decodeBytes: decode1.bytes,
      recvRate: rows / recv.seconds,
      insertSeconds,
      load: [load, loadavg()[0]],
    };
  } finally {
    for (const s of [slot, floorSlot, recvSlot]) {
      await db.query('select pg_drop_replication_slot($1)', [s]).catch(() => undefined);
    }
    await db.query(`drop publication if exists ${publication}`).catch(() => undefined);
    await db.query(`drop table if exists public.${table}, public.${steadyTable}`).catch(() => undefined);
    await admin.deleteTopics({ topics: [topic, steadyTopic] }).catch(() => undefined);
  }
};

// --- main -----------------------------------------------------------------------

const CASE_SETTINGS = {
  bulk: { rows: ROWS, perTransaction: PER_TRANSACTION, steadyRows: STEADY_ROWS },
  single: { rows: SINGLE_ROWS, perTransaction: 1, steadyRows: 0 },
};
const results = new Map(CASES.map((c) => [c, []]));
try {
  // Warm-up, not counted: the worker program, the broker and the server's caches.
  if (WARMUP_ROWS > 0) await runCase(WARMUP_ROWS, PER_TRANSACTION, 0);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const name of CASES) {
      const { rows, perTransaction, steadyRows } = CASE_SETTINGS[name];
      try {
        const r = await runCase(rows, perTransaction, steadyRows);
        results.get(name).push(r);
        log(
          `[${round}] ${name}: worker ${thousands(r.rate)} events/s (${thousands(r.rateFromStart)} from process start), ` +
            `decode ${thousands(r.decodeRate)}, pg_recvlogical ${thousands(r.recvRate)}, ` +
            `worker/decode ${Math.round((r.rate / r.decodeRate) * 100)}%, worker/pg_recvlogical ${Math.round((r.rate / r.recvRate) * 100)}%, ` +
            `peak RSS ${r.rss.toFixed(0)} MiB, ${steadyLog(r.steady)}on the topic ${r.written} of ${rows}, ` +
            `pgoutput ${r.decodeMessages} messages ${thousands(r.decodeBytes / 1024)} KiB, inserts ${r.insertSeconds.toFixed(1)} s, ` +
            `load ${r.load.map((l) => l.toFixed(1)).join('–')}`,
        );
        if (r.written !== rows) log(`[${round}] ${name}: the topic holds ${r.written} events, not ${rows}`);
      } catch (e) {
        log(`[${round}] ${name} failed: ${e.message.slice(0, 300)}`);
      }
    }
  }
} finally {
  await admin.close();
  await db.end();
  await serverClient.query(`drop database if exists ${database} with (force)`).catch(() => undefined);
  await serverClient.end();
}

const rows = [...results].map(([name, rs]) => {
  const { rows: n, perTransaction } = CASE_SETTINGS[name];
  if (rs.length === 0)
    return [name, thousands(n), String(perTransaction), 'failed', '', '', '', '', '', '', '', ''];
  const of = (f) => rs.map(f);
  const loads = rs.flatMap((r) => r.load);
  return [
    name,
    thousands(n),
    String(perTransaction),
    medianCell(of((r) => r.rate)),
    thousands(median(of((r) => r.rateFromStart))),
    medianCell(of((r) => r.decodeRate)),
    medianCell(
      of((r) => r.rate / r.decodeRate),
      pct,
    ),
    medianCell(of((r) => r.recvRate)),
    medianCell(
      of((r) => r.rate / r.recvRate),
      pct,
    ),
    steadyCell(rs.filter((r) => r.steady).map((r) => r.steady)),
    `${Math.max(...of((r) => r.rss)).toFixed(0)} MiB`,
    loadCell(loads),
  ];
});
console.log(
  `\nPostgreSQL CDC, rows of about ${ROW_SIZE} bytes: medians of ${ROUNDS} round(s), (min–max) over the rounds, ratios round by round; peak RSS: the largest\n`,
);
console.log(
  table(
    [
      'Case',
      'rows',
      'rows per transaction',
      'worker events/s',
      'from process start',
      'decode floor events/s',
      'worker / decode',
      'pg_recvlogical events/s',
      'worker / pg_recvlogical',
      `steady ${thousands(STEADY_RATE)} rows/s: p50 / p99 / max ms (inserts' p99)`,
      'worker peak RSS',
      'load avg',
    ],
    rows,
  ),
);
if (process.env.BENCH_JSON) {
  writeFileSync(process.env.BENCH_JSON, JSON.stringify(Object.fromEntries(results), null, 2));
}
process.exit(0);
