// Mapper benchmark: for each message shape, the pipeline a
// worker runs (JSON.parse, map, JSON.stringify of every row) against the floor
// (JSON.parse + JSON.stringify of the same messages) and against jq doing the
// same mapping over newline-delimited messages. Usage:
//   npm run build && npm run bench:mapper [-- --seconds 2 --runs 3 --shape wide --json]
//
// Each rule set is measured in a fresh process, as a worker runs one rule set:
// in a shared process the first rule set's type feedback slows the next ones,
// which would charge one shape for another. Within a process the mapper and the
// floor alternate in short slices, so drift of a shared machine hits both alike.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { SHAPES, rng } from './shapes.js';

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at === -1 ? fallback : args[at + 1];
};
const SECONDS = Number(option('--seconds', '2'));
const ONLY = option('--shape', null); // flat, nested or wide
const CHOSEN = SHAPES.filter((s) => ONLY === null || s.id === ONLY);
const MESSAGES = 2000; // distinct messages per shape, cycled through during a measurement
// Short alternating slices: a burst of load from elsewhere hits the mapper and the floor alike.
const SLICES = Math.max(4, Math.round(SECONDS * 5));

const loadShared = async () => {
  try {
    return await import('@sluice/shared/mapper');
  } catch (e) {
    console.error(`Cannot import @sluice/shared/mapper (${e.message}).\nBuild it first: npm run build`);
    process.exit(1);
  }
};

const messagesOf = (shape) => {
  const r = rng(42);
  return Array.from({ length: MESSAGES }, (_, i) => JSON.stringify(shape.message(r, i)));
};

// --- worker: one shape, one rule set, one process ------------------------------

const worker = async (shapeId, variant) => {
  const { compileMapper, mapperCryptoStats } = await loadShared();
  const shape = SHAPES.find((s) => s.id === shapeId);
  const lines = messagesOf(shape);
  const mapper = compileMapper(shape[variant]);
  let sink = 0; // keeps the engine from discarding work whose result is unused
  const floor = (line) => {
    sink += JSON.stringify(JSON.parse(line)).length;
    return 1;
  };
  const map = (line) => {
    const rows = mapper.apply(JSON.parse(line));
    for (const row of rows) sink += JSON.stringify(row).length;
    return rows.length;
  };
  const run = (fn, ms) => {
    let [messages, rows] = [0, 0];
    const start = performance.now();
    let now = start;
    while (now - start < ms) {
      for (const line of lines) rows += fn(line);
      messages += lines.length;
      now = performance.now();
    }
    return { messages, rows, ms: now - start };
  };
  run(floor, 300); // warm-up: let the JIT settle before counting
  run(map, 300);
  const total = { floor: { messages: 0, rows: 0, ms: 0 }, mapper: { messages: 0, rows: 0, ms: 0 } };
  for (let slice = 0; slice < SLICES; slice++) {
    for (const [name, fn] of [
      ['floor', floor],
      ['mapper', map],
    ]) {
      const r = run(fn, (SECONDS * 1000) / SLICES);
      for (const k of ['messages', 'rows', 'ms']) total[name][k] += r[k];
    }
  }
  const rate = (t) => ({ messagesPerSec: (t.messages * 1000) / t.ms, rowsPerSec: (t.rows * 1000) / t.ms });
  const out = {
    floor: rate(total.floor),
    mapper: rate(total.mapper),
    keyDerivations: mapperCryptoStats().keyDerivations,
  };
  process.stdout.write(JSON.stringify({ ...out, sink: sink % 7 }));
};

// --- main: every shape in its own process, then jq ------------------------------

const measureInProcess = (shapeId, variant) => {
  const child = spawnSync(
    process.execPath,
    [fileURLToPath(import.meta.url), '--worker', shapeId, variant, '--seconds', String(SECONDS)],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  );
  if (child.status !== 0) process.exit(child.status ?? 1);
  return JSON.parse(child.stdout);
};

const hasJq = spawnSync('jq', ['--version']).status === 0;

/** jq over `shape.jqMessages` messages in one process (start-up amortised); messages per second. */
const measureJq = (dir, shape, lines) => {
  const file = join(dir, `${shape.id}.ndjson`);
  const copies = Math.max(1, Math.round(shape.jqMessages / lines.length));
  writeFileSync(file, Array.from({ length: copies }, () => lines.join('\n')).join('\n') + '\n');
  const start = performance.now();
  const out = spawnSync('sh', ['-c', 'jq -c "$0" < "$1" > /dev/null', shape.jq, file], { encoding: 'utf8' });
  const ms = performance.now() - start;
  if (out.status !== 0) throw new Error(`jq failed: ${out.stderr}`);
  return (lines.length * copies * 1000) / ms;
};

/** The jq program must give the mapper's rows, or the comparison means nothing. */
const jqAgrees = (shape, lines, compileMapper) => {
  const sample = lines.slice(0, 20);
  const out = spawnSync('jq', ['-c', shape.jq], { input: sample.join('\n') + '\n', encoding: 'utf8' });
  const jqRows = out.stdout
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l));
  const mapper = compileMapper(shape.rules);
  return JSON.stringify(jqRows) === JSON.stringify(sample.flatMap((l) => mapper.apply(JSON.parse(l))));
};

/** One pass over every shape. */
const measureAll = (dir) =>
  CHOSEN.map((shape) => {
    const lines = messagesOf(shape);
    // jq runs just before and just after the mapper's process, and the two are averaged.
    const jqBefore = hasJq ? measureJq(dir, shape, lines) : 0;
    const m = measureInProcess(shape.id, 'rules');
    const result = {
      mapperMessagesPerSec: m.mapper.messagesPerSec,
      mapperRowsPerSec: m.mapper.rowsPerSec,
      floorMessagesPerSec: m.floor.messagesPerSec,
      ofFloor: m.mapper.messagesPerSec / m.floor.messagesPerSec,
      keyDerivations: m.keyDerivations,
    };
    if (hasJq) {
      result.jqMessagesPerSec = (jqBefore + measureJq(dir, shape, lines)) / 2;
      result.vsJq = m.mapper.messagesPerSec / result.jqMessagesPerSec;
    }
    if (shape.plainRules) {
      // Compared as fractions of each process's own floor, which cancels drift between the two processes.
      const plain = measureInProcess(shape.id, 'plainRules');
      result.plainMessagesPerSec = plain.mapper.messagesPerSec;
      result.encryptedVsPlain = plain.mapper.messagesPerSec / plain.floor.messagesPerSec / result.ofFloor;
    }
    return result;
  });

const median = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

const main = async () => {
  const { compileMapper } = await loadShared();
  const runs = Math.max(1, Number(option('--runs', '1')));
  const dir = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
  const passes = [];
  try {
    for (let i = 0; i < runs; i++) passes.push(measureAll(dir));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  // Per shape and figure: the median over the passes, and the range.
  const results = CHOSEN.map((shape, k) => {
    const lines = messagesOf(shape);
    const figures = {};
    for (const name of Object.keys(passes[0][k])) {
      const xs = passes.map((p) => p[k][name]);
      figures[name] = { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
    }
    return {
      shape: shape.name,
      bytesPerMessage: Math.round(lines.reduce((n, l) => n + l.length, 0) / lines.length),
      jqSameRows: !hasJq ? undefined : shape.jqEquivalent ? jqAgrees(shape, lines, compileMapper) : 'n/a',
      target: shape.target,
      figures,
    };
  });
  report(results, runs);
};

const fmt = (n) => Math.round(n).toLocaleString('en-US');
const pct = (x) => `${(x * 100).toFixed(0)}%`;
const verdict = (ok) => (ok ? 'meets' : 'MISSES');

const report = (results, runs) => {
  if (args.includes('--json')) {
    console.log(JSON.stringify({ node: process.version, seconds: SECONDS, runs, results }, null, 1));
    return;
  }
  const of = runs > 1 ? `median of ${runs} runs` : 'one run';
  console.log(`Mapper benchmark: Node ${process.version}, one thread, ${SECONDS}s per measurement, ${of}\n`);
  for (const x of results) {
    const f = (name) => x.figures[name]?.median;
    const range = (name, show) =>
      runs > 1 ? ` (${show(x.figures[name].min)} to ${show(x.figures[name].max)})` : '';
    console.log(`${x.shape} (${x.bytesPerMessage} B/message)`);
    console.log(
      `  mapper pipeline  ${fmt(f('mapperMessagesPerSec'))} messages/s, ${fmt(f('mapperRowsPerSec'))} rows/s`,
    );
    console.log(
      `  floor            ${fmt(f('floorMessagesPerSec'))} messages/s (JSON.parse + JSON.stringify)`,
    );
    const floorTarget =
      x.target.ofFloor > 0
        ? `, target >= ${pct(x.target.ofFloor)}: ${verdict(f('ofFloor') >= x.target.ofFloor)}`
        : '';
    console.log(`  mapper / floor   ${pct(f('ofFloor'))}${range('ofFloor', pct)}${floorTarget}`);
    if (f('jqMessagesPerSec') !== undefined) {
      const same =
        x.jqSameRows === 'n/a'
          ? 'jq has no hash or cipher: it only casts and copies'
          : `same rows: ${x.jqSameRows}`;
      console.log(`  jq               ${fmt(f('jqMessagesPerSec'))} messages/s (${same})`);
      const x1 = (v) => `${v.toFixed(1)}x`;
      console.log(
        `  mapper / jq      ${x1(f('vsJq'))}${range('vsJq', x1)}, target >= 4x: ${verdict(f('vsJq') >= 4)}`,
      );
    }
    if (f('encryptedVsPlain') !== undefined) {
      const x2 = (v) => `${v.toFixed(2)}x`;
      console.log(`  same rules, encrypted column left plain: ${fmt(f('plainMessagesPerSec'))} messages/s`);
      console.log(
        `  encrypted / plain cost  ${x2(f('encryptedVsPlain'))}${range('encryptedVsPlain', x2)}, target <= 2x: ${verdict(f('encryptedVsPlain') <= 2)}`,
      );
      console.log(`  PBKDF2 derivations in the mapper's process: ${f('keyDerivations')}`);
    }
    console.log('');
  }
  if (!hasJq) console.log('jq not found: the jq comparison was skipped.');
};

if (args[0] === '--worker') await worker(args[1], args[2]);
else await main();
