// Kafka client comparison: @platformatic/kafka, kafkajs and
// @confluentinc/kafka-javascript producing and consuming the same messages on
// the same broker. Usage (the npm script starts a broker):
//   npm run bench:kafka-clients [-- --messages 50000 --rounds 3]
//
// Each client runs in a fresh process per round (its own JIT and memory), the
// clients alternate within a round (each round starting with another one) so
// drift of a shared machine hits all of them, after one warm-up round that is
// not counted; the table shows medians over rounds. Produce: batches of 500
// messages (the worker's batch size), one batch in flight, idempotent,
// acks=all, no compression. Consume: a new consumer group from the earliest
// offset, no commits; the clock starts before the group join (some clients hand
// over whole fetched batches, so timing from the first message would flatter them).
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Admin } from '@platformatic/kafka';
import { SHAPES, rng } from '../mapper/shapes.js';
import { CLIENTS } from './clients.js';
import { runJsonChild } from '../pipeline/child.js';
import { median, option, table } from '../pipeline/report.js';

const HERE = fileURLToPath(new URL('.', import.meta.url));
const BATCH = 500;
const PARTITIONS = 3;

const brokersFromEnv = () => {
  const list = process.env.SLUICE_TEST_KAFKA_BROKERS;
  if (!list) {
    console.error('No broker: run through `npm run bench:kafka-clients` (scripts/with-kafka.sh).');
    process.exit(1);
  }
  return list.split(',');
};

/** The flat CDC record of the mapper bench (598 B), keyed by its id. */
const batchesOf = (n) => {
  const r = rng(7);
  const flat = SHAPES.find((s) => s.id === 'flat');
  const messages = Array.from({ length: n }, (_, i) => ({
    key: String(i),
    value: JSON.stringify(flat.message(r, i)),
  }));
  const batches = [];
  for (let i = 0; i < n; i += BATCH) batches.push(messages.slice(i, i + BATCH));
  return batches;
};

// --- child: one client, one round ------------------------------------------------

const child = async (clientName, topic, n, packageDir) => {
  const brokers = brokersFromEnv();
  const client = clientName === 'confluent' ? CLIENTS.confluent(packageDir) : CLIENTS[clientName];
  const produceSeconds = await client.produce({ brokers, topic, batches: batchesOf(n) });
  const consumeSeconds = await client.consume({ brokers, topic, n });
  process.stdout.write(
    `${JSON.stringify({
      version: client.version(),
      produce: n / produceSeconds,
      consume: n / consumeSeconds,
      peakRssMiB: process.resourceUsage().maxRSS / 1024,
    })}\n`,
  );
  process.exit(0);
};

const runChild = (clientName, topic, n, packageDir) =>
  runJsonChild(fileURLToPath(import.meta.url), ['--child', clientName, topic, String(n), packageDir ?? ''], {
    label: clientName,
    timeoutMs: 180_000,
  });

/** Builds (or finds in the cache) the confluent client's native addon; its package directory, or why not. */
const buildConfluent = () => {
  const r = spawnSync('bash', [`${HERE}/build-confluent.sh`], { encoding: 'utf8', timeout: 30 * 60_000 });
  if (r.status === 0) return { packageDir: r.stdout.trim().split('\n').pop() };
  const reason = (r.stderr || r.error?.message || `exit ${r.status}`).trim().split('\n');
  return { reason: reason.slice(0, 1).concat(reason.slice(-3)).join(' | ') };
};

const main = async () => {
  const n = Number(option('--messages', process.env.BENCH_MESSAGES ?? '50000'));
  const rounds = Number(option('--rounds', process.env.BENCH_ROUNDS ?? '5'));
  const only = option('--clients', 'platformatic,kafkajs,confluent').split(',');
  const brokers = brokersFromEnv();
  const confluent = only.includes('confluent') ? buildConfluent() : { reason: 'not selected' };
  const names = only.filter((c) => c !== 'confluent' || confluent.packageDir);
  const admin = new Admin({ clientId: 'bench-admin', bootstrapBrokers: brokers });
  const results = Object.fromEntries(only.map((c) => [c, []]));
  const load = [];
  const run = Math.random().toString(36).slice(2, 8);
  // A warm-up round, not counted: the broker's JIT and page cache would otherwise charge the first client.
  for (const name of names) {
    const topic = `bench-clients-warmup-${name}-${run}`;
    await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 });
    await runChild(name, topic, Math.min(n, 10_000), confluent.packageDir);
  }
  for (let round = 1; round <= rounds; round++) {
    // Each round starts with another client, so none is always first after a pause.
    const order = names.map((_, i) => names[(i + round - 1) % names.length]);
    for (const name of order) {
      const topic = `bench-clients-${name}-${run}-${round}`;
      await admin.createTopics({ topics: [topic], partitions: PARTITIONS, replicas: 1 });
      load.push(loadavg()[0]);
      const r = await runChild(name, topic, n, confluent.packageDir);
      results[name].push(r);
      console.error(
        `round ${round} ${name}: produce ${Math.round(r.produce)} msg/s, consume ${Math.round(r.consume)} msg/s, peak RSS ${r.peakRssMiB.toFixed(0)} MiB`,
      );
    }
  }
  await admin.close();

  const base = results.platformatic ?? [];
  // The median of the ratios round by round, and their range.
  const ratio = (rs, key) => {
    if (base.length !== rs.length) return '—';
    const each = rs.map((r, i) => r[key] / base[i][key]);
    return `${median(each).toFixed(2)} (${Math.min(...each).toFixed(2)}–${Math.max(...each).toFixed(2)})`;
  };
  const rows = only.map((name) => {
    const rs = results[name];
    if (rs.length === 0) {
      const why = name === 'confluent' ? confluent.reason : 'not run';
      return [
        CLIENTS[name]?.name ?? '@confluentinc/kafka-javascript',
        '—',
        `not measured: ${why}`,
        '',
        '',
        '',
      ];
    }
    const label = name === 'confluent' ? '@confluentinc/kafka-javascript' : CLIENTS[name].name;
    return [
      `${label} ${rs[0].version}`,
      Math.round(median(rs.map((r) => r.produce))).toLocaleString('en'),
      ratio(rs, 'produce'),
      Math.round(median(rs.map((r) => r.consume))).toLocaleString('en'),
      ratio(rs, 'consume'),
      `${median(rs.map((r) => r.peakRssMiB)).toFixed(0)} MiB`,
    ];
  });
  console.log(
    `\nKafka clients: ${n.toLocaleString('en')} messages of 598 B, ${PARTITIONS} partitions, batches of ${BATCH}, medians of ${rounds} rounds; load average ${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)}\n`,
  );
  console.log(
    table(['Client', 'produce msg/s', '× platformatic', 'consume msg/s', '× platformatic', 'peak RSS'], rows),
  );
  if (process.env.BENCH_JSON)
    writeFileSync(process.env.BENCH_JSON, JSON.stringify({ n, rounds, results, confluent }, null, 2));
};

if (process.argv[2] === '--child') {
  await child(process.argv[3], process.argv[4], Number(process.argv[5]), process.argv[6] || undefined);
} else {
  await main();
}
