// MariaDB CDC benchmark: the real worker program's MARIADB_SOURCE engine
// (the row-based binary log read as a replica → ChangeEvents on the real
// broker) against MariaDB's own binary log client reading the same
// transactions (mariadb-floor.js).
// Usage (the npm script starts MariaDB and a broker):
//   npm run build && npm run bench:cdc:mariadb [-- --rows 200000 --rounds 3]
//
// One round:
//   1. a fresh table of ~120-byte rows; the worker starts once on it empty
//      (its snapshot, then its first recorded position, as a new connector)
//      and is stopped;
//   2. N rows are inserted in transactions of `--per-transaction` rows while
//      no one streams: they are in the binary log before the measured worker
//      starts, so the figure is the source's, not the inserts';
//   3. the floor: mariadb-binlog reads the same part of the log (raw to
//      /dev/null, then decoded to SQL text to /dev/null);
//   4. the worker starts again from its recorded position:
//      events/s = N / (time from /readyz = 200 until
//      sluice_source_messages_total reaches N), i.e. every change published
//      and acknowledged by the broker (idempotent, acks=all), polled every
//      25 ms; the same from the process start is shown too;
//   5. latency at a steady rate, the same worker still running: `--steady-rows`
//      rows into a second captured table at `--steady-rate` rows/s (a
//      transaction of rate/100 rows every 10 ms), each row's time from the
//      moment its insert was sent to the broker's append of its event (the
//      topic keeps LogAppendTime; with one replica and acks=all the broker
//      acknowledges at the append), read back from the topic;
//   6. checks, not timed: the topics hold N and steady-rows events.
// Peak RSS: the worker's VmHWM over the backlog and the steady phase.
/* global performance -- Node 24 global */
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import mysql from 'mysql2/promise';
import { Admin } from '@platformatic/kafka';
import { DEFAULT_WORKER_NODE_OPTIONS } from '@sluice/shared/ports';
import { messagesIn } from '../pipeline/kafka.js';
import { startWorker } from '../pipeline/worker.js';
import { median, option, table, thousands } from '../pipeline/report.js';
import { readBinlog } from './mariadb-floor.js';
import { loadCell, medianCell, pct, publishedAtLeast, steadyCell, steadyLog } from './measure.js';
import { benchServers, workerEnv } from './servers.js';
import { APPEND_TIME, steadyLatency } from './steady.js';

const ROWS = Number(option('--rows', process.env.BENCH_ROWS ?? '200000'));
const PER_TRANSACTION = Number(option('--per-transaction', '1000'));
const ROUNDS = Number(option('--rounds', process.env.BENCH_ROUNDS ?? '1'));
const WARMUP_ROWS = Number(option('--warmup-rows', '10000'));
const STEADY_ROWS = Number(option('--steady-rows', '10000'));
const STEADY_RATE = Number(option('--steady-rate', '1000'));
const WORKER_NODE_OPTIONS = option('--worker-node-options', DEFAULT_WORKER_NODE_OPTIONS);

const { brokers, url: mysqlUrl } = benchServers(
  'SLUICE_TEST_MYSQL_URL',
  '`npm run bench:cdc:mariadb` (scripts/with-mariadb.sh, with-kafka.sh)',
);
const run = Math.random().toString(36).slice(2, 8);
let named = 0;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.error(...a);

const admin = new Admin({ clientId: 'bench-admin', bootstrapBrokers: brokers });

// --- the database -----------------------------------------------------------------

const u = new URL(mysqlUrl);
const database = `sluice_bench_cdc_${run}`;
const settings = {
  host: u.hostname,
  port: Number(u.port || 3306),
  user: decodeURIComponent(u.username),
  password: decodeURIComponent(u.password),
  database,
  ssl_mode: 'disabled',
};
const db = await mysql.createConnection({
  host: settings.host,
  port: settings.port,
  user: settings.user,
  password: settings.password,
});
await db.query(`create database \`${database}\``);
await db.query(`use \`${database}\``);
const version = (await db.query('select version() as v'))[0][0].v;

// About 120 bytes of values a row: two ints, a text of 39–44 characters, a decimal, a JSON document of ~55.
const CREATE = (name) => `create table \`${name}\` (id int primary key, version int not null,
  label varchar(64) not null, amount decimal(12,2) not null, doc json not null)`;
const ROWS_SQL = (name, from, count) => `insert into \`${name}\` (id, version, label, amount, doc)
  select ${from - 1} + seq, 0, concat('#', ${from - 1} + seq, ' ', md5(${from - 1} + seq)),
         ((${from - 1} + seq) * 37 % 10000000) / 100.0,
         json_object('n', ${from - 1} + seq, 'tags', json_array(concat('t', seq % 17), concat('t', seq % 5)),
                     't', left(md5(seq), 12))
    from seq_1_to_${count}`;

/** Rows `from`.. of `count`, in transactions of `perTransaction` (each insert commits on its own). */
const insertRows = async (name, from, count, perTransaction) => {
  for (let at = from; at < from + count; at += perTransaction) {
    await db.query(ROWS_SQL(name, at, Math.min(perTransaction, from + count - at)));
  }
};

/** The binary log's current end: file and offset. */
const logEnd = async () => {
  const [rows] = await db.query('show master status');
  return { file: rows[0].File, offset: Number(rows[0].Position) };
};
/** The binary log files from `first` on, in order. */
const logsFrom = async (first) => {
  const [rows] = await db.query('show binary logs');
  const names = rows.map((r) => r.Log_name);
  return names.slice(names.indexOf(first));
};

/** Waits until the worker's position topic holds a record (its snapshot is done and recorded). */
const untilRecorded = async (connectorId, worker, ms = 60_000) => {
  const deadline = Date.now() + ms;
  while ((await messagesIn(admin, `sluice-position.${connectorId}`).catch(() => 0)) === 0) {
    if (Date.now() > deadline) throw new Error(`no position recorded by ${connectorId} in ${ms} ms`);
    await worker.metrics(); // throws when the worker is gone
    await sleep(100);
  }
};

// --- one round ---------------------------------------------------------------------

const runRound = async (rows, perTransaction, steadyRows) => {
  const id = `${run}_${++named}`;
  const backlog = `cdc_${id}`;
  const steady = `steady_${id}`;
  const topics = { backlog: `bench-cdc-${id}`, steady: `bench-cdc-steady-${id}` };
  const connectorId = `bench-cdc-mariadb-${id}`;
  const config = {
    connector_id: connectorId,
    connector_type: 'MARIADB_SOURCE',
    role: 'source',
    configuration: { ...settings, whitelist: [`${database}.${backlog}`, `${database}.${steady}`] },
    datamodels: [
      {
        id: `dm-${id}`,
        name: backlog,
        entry: `${database}.${backlog}`,
        enabled: true,
        topic: topics.backlog,
      },
      { id: `dm-s-${id}`, name: steady, entry: `${database}.${steady}`, enabled: true, topic: topics.steady },
    ],
  };
  const env = workerEnv(brokers, WORKER_NODE_OPTIONS);
  await db.query(CREATE(backlog));
  await db.query(CREATE(steady));
  await admin.createTopics({ topics: [topics.backlog], partitions: 3, replicas: 1 });
  await admin.createTopics({
    topics: [topics.steady],
    partitions: 3,
    replicas: 1,
    configs: APPEND_TIME,
  });
  try {
    // 1. The connector's first start: snapshot (of empty tables), first recorded position.
    const prime = await startWorker(config, env);
    try {
      await prime.ready();
      await untilRecorded(connectorId, prime);
    } finally {
      await prime.stop();
    }
    // 2. The changes, in the binary log before anyone streams them.
    const from = await logEnd();
    const t0 = performance.now();
    await insertRows(backlog, 1, rows, perTransaction);
    const insertSeconds = (performance.now() - t0) / 1000;
    const to = await logEnd();
    const files = await logsFrom(from.file);
    const logBytes = files.length === 1 ? to.offset - from.offset : NaN;
    const load = loadavg()[0];
    // 3. The floor.
    const floor = await readBinlog({ url: mysqlUrl, files, from, to });
    // 4. The worker, from its recorded position.
    const spawned = performance.now();
    const worker = await startWorker(config, env);
    try {
      await worker.ready();
      const ready = performance.now();
      const end = await publishedAtLeast(worker, rows);
      const backlogRss = worker.peakRssMiB();
      // 5. Steady rate.
      let steadyResult = null;
      if (steadyRows > 0) {
        steadyResult = await steadyLatency({
          worker,
          brokers,
          topic: topics.steady,
          published: rows,
          count: steadyRows,
          rate: STEADY_RATE,
          insert: (from, n) => db.query(ROWS_SQL(steady, from, n)),
        });
      }
      return {
        rate: rows / ((end - ready) / 1000),
        rateFromStart: rows / ((end - spawned) / 1000),
        rawRate: rows / floor.raw,
        textRate: rows / floor.text,
        backlogRss,
        rss: worker.peakRssMiB(),
        steady: steadyResult,
        written: await messagesIn(admin, topics.backlog),
        writtenSteady: await messagesIn(admin, topics.steady),
        logBytes,
        insertSeconds,
        load: [load, loadavg()[0]],
      };
    } finally {
      await worker.stop();
    }
  } finally {
    await db.query(`drop table if exists \`${backlog}\`, \`${steady}\``).catch(() => undefined);
    await admin
      .deleteTopics({ topics: [topics.backlog, topics.steady, `sluice-position.${connectorId}`] })
      .catch(() => undefined);
  }
};

// --- main -----------------------------------------------------------------------

const results = [];
try {
  // Warm-up, not counted: the worker program, the broker and the server's caches.
  if (WARMUP_ROWS > 0) await runRound(WARMUP_ROWS, PER_TRANSACTION, 0);
  for (let round = 1; round <= ROUNDS; round++) {
    try {
      const r = await runRound(ROWS, PER_TRANSACTION, STEADY_ROWS);
      results.push(r);
      log(
        `[${round}] worker ${thousands(r.rate)} events/s (${thousands(r.rateFromStart)} from process start), ` +
          `mariadb-binlog raw ${thousands(r.rawRate)}, text ${thousands(r.textRate)}, ` +
          `worker/raw ${pct(r.rate / r.rawRate)}, worker/text ${pct(r.rate / r.textRate)}, ` +
          `peak RSS ${r.backlogRss.toFixed(0)} MiB after the backlog, ${r.rss.toFixed(0)} MiB at the end, ` +
          steadyLog(r.steady) +
          `on the topics ${r.written} of ${ROWS} and ${r.writtenSteady} of ${STEADY_ROWS}, ` +
          `binary log ${thousands(r.logBytes / ROWS)} bytes a row, inserts ${r.insertSeconds.toFixed(1)} s, ` +
          `load ${r.load.map((l) => l.toFixed(1)).join('–')}`,
      );
      if (r.written !== ROWS) log(`[${round}] the topic holds ${r.written} events, not ${ROWS}`);
      if (r.writtenSteady !== STEADY_ROWS)
        log(`[${round}] the steady topic holds ${r.writtenSteady} events, not ${STEADY_ROWS}`);
    } catch (e) {
      log(`[${round}] failed: ${e.message.slice(0, 300)}`);
    }
  }
} finally {
  await admin.close();
  await db.query(`drop database if exists \`${database}\``).catch(() => undefined);
  await db.end();
}

const of = (f) => results.map(f);
const steadies = results.filter((r) => r.steady).map((r) => r.steady);
const loads = results.flatMap((r) => r.load);
console.log(
  `\nMariaDB ${version} CDC: ${thousands(ROWS)} rows in transactions of ${thousands(PER_TRANSACTION)}, ` +
    `medians of ${results.length} of ${ROUNDS} round(s), (min–max) over the rounds, ratios round by round; ` +
    `steady: ${thousands(STEADY_ROWS)} rows at ${thousands(STEADY_RATE)} rows/s; peak RSS: the largest\n`,
);
console.log(
  results.length === 0
    ? 'every round failed'
    : table(
        [
          'worker events/s',
          'from process start',
          'mariadb-binlog raw events/s',
          'worker / raw',
          'mariadb-binlog text events/s',
          'worker / text',
          "steady p50 / p99 / max ms (inserts' p99)",
          'worker peak RSS',
          'binary log bytes a row',
          'load avg',
        ],
        [
          [
            medianCell(of((r) => r.rate)),
            thousands(median(of((r) => r.rateFromStart))),
            medianCell(of((r) => r.rawRate)),
            medianCell(
              of((r) => r.rate / r.rawRate),
              pct,
            ),
            medianCell(of((r) => r.textRate)),
            medianCell(
              of((r) => r.rate / r.textRate),
              pct,
            ),
            steadyCell(steadies),
            `${Math.max(...of((r) => r.rss)).toFixed(0)} MiB`,
            thousands(median(of((r) => r.logBytes / ROWS))),
            loadCell(loads),
          ],
        ],
      ),
);
if (process.env.BENCH_JSON) writeFileSync(process.env.BENCH_JSON, JSON.stringify(results, null, 2));
process.exit(results.length === ROUNDS ? 0 : 1);
