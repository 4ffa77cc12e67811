// API benchmark: the real gateway (`node gateway/dist/main.js`
// in a child process, on a temporary data dir and a free 127.0.0.1 port) is
// seeded through its REST API (users, environments, a team, and a catalog of
// pipelines in that team), then autocannon drives six authenticated reads
// against it and against a bare node:http server (floor.js, another child
// process) that answers the same bytes. Prints req/s, p50/p99 and the ratio to
// the floor for each endpoint; then times a bounded number of pipeline
// creations (the write path, catalog.js). Usage (after `npm run build`):
//   npm run bench:api
//   BENCH_DURATION_S=5 BENCH_ROUNDS=3 BENCH_DATABASE_URL=postgres://... npm run bench:api
// Every knob is an environment variable; see bench/README.md, section "API".
/* global fetch, URLSearchParams -- Node 24 globals */
import { fork, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import autocannon from 'autocannon';
import { createPipelines, quantile } from './catalog.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = resolve(HERE, '../..');
const GATEWAY_MAIN = join(ROOT, 'gateway/dist/main.js');

const num = (name, fallback) => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n < 0) {
    console.error(`${name} must be a non-negative number, got "${raw}"`);
    process.exit(2);
  }
  return n;
};

const DURATION_S = num('BENCH_DURATION_S', 10);
const WARMUP_S = num('BENCH_WARMUP_S', 2);
const CONNECTIONS = num('BENCH_CONNECTIONS', 50);
const ROUNDS = Math.max(1, Math.floor(num('BENCH_ROUNDS', 1)));
const ENVS = num('BENCH_ENVS', 50);
const USERS = num('BENCH_USERS', 10);
const PIPELINES = Math.floor(num('BENCH_PIPELINES', 200));
const WRITES = Math.floor(num('BENCH_WRITES', 200));
const WRITE_CONCURRENCY = Math.max(1, Math.floor(num('BENCH_WRITE_CONCURRENCY', 4)));
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL || 'warn';
const DATABASE_URL = process.env.BENCH_DATABASE_URL || undefined;
const CPU_PROF_DIR = process.env.BENCH_CPU_PROF_DIR ? resolve(process.env.BENCH_CPU_PROF_DIR) : undefined;
const JSON_OUT = process.env.BENCH_JSON || undefined;
const GOAL = 0.5; // authenticated reads at least 50% of the floor

if (!existsSync(GATEWAY_MAIN)) {
  console.error(
    `bench:api: ${GATEWAY_MAIN} is missing. Build the gateway first: npm run build (or make build)`,
  );
  process.exit(1);
}

const ADMIN = { email: 'bench-admin@example.com', password: `bench-${randomBytes(12).toString('hex')}` };
const RUN_ID = randomBytes(4).toString('hex'); // keeps names unique on a reused PostgreSQL database
const tmp = mkdtempSync(join(tmpdir(), 'sluice-bench-api-'));
const logFile = join(tmp, 'gateway.log');
const children = [];
let seedSeconds; // how long seeding the catalog took

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const freePort = () =>
  new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });

/** Peak resident set (VmHWM) of a live process, in MiB; undefined off Linux. */
const peakRssMiB = (pid) => {
  try {
    const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
};

const logTail = () => {
  try {
    return readFileSync(logFile, 'utf8').split('\n').slice(-30).join('\n');
  } catch {
    return '(no log)';
  }
};

async function startGateway() {
  const port = await freePort();
  const env = { ...process.env };
  delete env.DATABASE_URL;
  Object.assign(env, {
    HOST: '127.0.0.1',
    PORT: String(port),
    SLUICE_DATA_DIR: join(tmp, 'data'),
    LOG_LEVEL,
    SLUICE_ADMIN_EMAIL: ADMIN.email,
    SLUICE_ADMIN_PASSWORD: ADMIN.password,
    // Only seeding hashes passwords (one login, a few registrations); the
    // measured reads never do. The default cost would only slow the setup.
    SLUICE_BCRYPT_COST: '4',
    NODE_ENV: 'production',
  });
  if (DATABASE_URL) env.DATABASE_URL = DATABASE_URL;
  const args = CPU_PROF_DIR ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF_DIR, GATEWAY_MAIN] : [GATEWAY_MAIN];
  // Logs go to a file, as they would to a collector: piping them into this
  // process would make autocannon pay for reading them.
  const out = openSync(logFile, 'a');
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', out, out] });
  children.push(child);
  let exited;
  child.once('exit', (code, signal) => (exited = { code, signal }));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (exited) throw new Error(`gateway exited during start (${JSON.stringify(exited)}):\n${logTail()}`);
    try {
      const res = await fetch(`${url}/api/healthchecks`);
      if (res.ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error(`gateway did not answer within 120 s:\n${logTail()}`);
    await sleep(100);
  }
  return { child, url, exited: () => exited };
}

async function stopGateway(g) {
  if (g.exited()) return;
  const done = new Promise((r) => g.child.once('exit', r));
  g.child.kill('SIGTERM');
  const timer = setTimeout(() => g.child.kill('SIGKILL'), 30_000);
  await done;
  clearTimeout(timer);
}

async function startFloor(bodies) {
  const child = fork(join(HERE, 'floor.js'), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  children.push(child);
  const { port } = await new Promise((ok, fail) => {
    child.once('message', ok);
    child.once('exit', (code) => fail(new Error(`floor server exited (${code})`)));
    child.send({ bodies });
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

async function call(base, method, path, { token, json, form, expect } = {}) {
  const headers = {};
  let body;
  if (token) headers.Authorization = `Bearer ${token}`;
  if (json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(json);
  } else if (form !== undefined) {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    body = new URLSearchParams(form).toString();
  }
  const res = await fetch(base + path, { method, headers, body });
  const text = await res.text();
  if (expect !== undefined && res.status !== expect) {
    throw new Error(`${method} ${path}: expected ${expect}, got ${res.status}: ${text.slice(0, 500)}`);
  }
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined };
}

/** Seeds through the REST API; returns the bearer token, the team and the measured paths. */
async function seed(base) {
  const login = await call(base, 'POST', '/api/auth/jwt/login', {
    form: { username: ADMIN.email, password: ADMIN.password },
    expect: 200,
  });
  const token = login.json.access_token;
  const page = await call(base, 'GET', '/api/envs/?size=50', { token, expect: 200 });
  for (let i = page.json.total; i < ENVS; i++) {
    await call(base, 'POST', '/api/envs/', { token, json: { name: `bench-${RUN_ID}-${i}` }, expect: 201 });
  }
  // The team lands in the caller's active environment: the first one it created.
  const team = await call(base, 'POST', '/api/teams/', {
    token,
    json: { name: `bench-${RUN_ID}` },
    expect: 201,
  });
  const ids = [];
  for (let i = 0; i < USERS; i++) {
    const user = await call(base, 'POST', '/api/auth/register', {
      json: { email: `bench-${RUN_ID}-${i}@example.com`, password: 'bench-password' },
      expect: 201,
    });
    ids.push(user.json.id);
  }
  if (ids.length) {
    await call(base, 'POST', `/api/teams/${team.json.id}/members/bulk`, {
      token,
      json: { members: ids },
      expect: 204,
    });
  }
  const endpoints = ['/api/users/me', '/api/envs/?size=50', `/api/teams/${team.json.id}/members`];
  if (PIPELINES > 0) {
    // The catalog: PIPELINES pipelines in the team, each with 2 new
    // connectors, 1 data model and 1 subscription; 4 requests at a time.
    const t0 = Date.now();
    const { ids } = await createPipelines(call, base, token, team.json.id, {
      prefix: `seed-${RUN_ID}`,
      count: PIPELINES,
      concurrency: 4,
    });
    seedSeconds = (Date.now() - t0) / 1000;
    endpoints.push(
      '/api/pipelines/?size=50',
      `/api/pipelines/${ids[ids.length >> 1]}`,
      '/api/connectors/?size=50',
    );
  }
  return { token, teamId: team.json.id, endpoints };
}

/** Pipelines and connectors the team holds, as the lists count them. */
async function catalogTotals(base, token, teamId) {
  const q = `?team_id=${teamId}&size=1`;
  const [p, c] = await Promise.all(
    ['pipelines', 'connectors'].map((k) => call(base, 'GET', `/api/${k}/${q}`, { token, expect: 200 })),
  );
  return { pipelines: p.json.total, connectors: c.json.total };
}

/** The path as the table shows it: the team id as a placeholder. */
const label = (path) => path.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/, '{id}');

const cannon = (url, headers, duration) =>
  new Promise((ok, fail) => {
    autocannon({ url, connections: CONNECTIONS, duration, headers }, (err, result) =>
      err ? fail(err) : ok(result),
    );
  });

async function measure(url, headers) {
  if (WARMUP_S > 0) await cannon(url, headers, WARMUP_S); // let the JIT settle first
  const r = await cannon(url, headers, DURATION_S);
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    non2xx: r.non2xx,
    errors: r.errors + r.timeouts,
    total: r.requests.total,
  };
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
};

function table(rows) {
  const header = ['endpoint', 'server', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'errors', 'ratio'];
  const lines = [header, ...rows];
  const widths = header.map((_, i) => Math.max(...lines.map((l) => String(l[i]).length)));
  const fmt = (l) => `| ${l.map((c, i) => String(c).padEnd(widths[i])).join(' | ')} |`;
  return [fmt(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...rows.map(fmt)].join('\n');
}

async function main() {
  const started = new Date();
  const gateway = await startGateway();
  const { token, teamId, endpoints } = await seed(gateway.url);
  const auth = { Authorization: `Bearer ${token}` };

  // The floor answers the gateway's own bytes for each path.
  const bodies = {};
  for (const path of endpoints) {
    bodies[path] = (await call(gateway.url, 'GET', path, { token, expect: 200 })).text;
  }
  const floor = await startFloor(bodies);
  for (const path of endpoints) {
    const echoed = await call(floor.url, 'GET', path, { expect: 200 });
    if (echoed.text !== bodies[path]) throw new Error(`floor answers ${path} with different bytes`);
  }
  const dbKind = (await call(gateway.url, 'GET', '/api/healthchecks/db', { expect: 200 })).json.database;

  console.log(
    `bench:api ${started.toISOString()} | Node ${process.version} | ${availableParallelism()} CPUs | ` +
      `database ${dbKind}${DATABASE_URL ? ' (BENCH_DATABASE_URL)' : ''} | LOG_LEVEL=${LOG_LEVEL} | ` +
      `${CONNECTIONS} connections, ${WARMUP_S} s warm-up + ${DURATION_S} s per measurement, ${ROUNDS} round(s)`,
  );
  if (seedSeconds !== undefined) {
    console.log(`  seeded ${PIPELINES} pipelines in ${seedSeconds.toFixed(1)} s (4 requests at a time)`);
  }
  for (const path of endpoints) console.log(`  ${label(path)}: ${Buffer.byteLength(bodies[path])} bytes`);

  const samples = Object.fromEntries(endpoints.map((p) => [p, { floor: [], gateway: [] }]));
  for (let round = 1; round <= ROUNDS; round++) {
    for (const path of endpoints) {
      // Floor then gateway, back to back, so both see the same machine.
      samples[path].floor.push(await measure(floor.url + path, {}));
      samples[path].gateway.push(await measure(gateway.url + path, auth));
      const f = samples[path].floor.at(-1);
      const g = samples[path].gateway.at(-1);
      console.log(
        `  round ${round}/${ROUNDS} ${label(path)}: gateway ${g.rps.toFixed(0)} req/s, floor ${f.rps.toFixed(0)} req/s`,
      );
    }
  }

  // The write path, after every read (a write clears the principal cache,
  // which would charge the reads for it): ROUNDS batches of WRITES creations,
  // WRITE_CONCURRENCY at a time, each timed from request to answer.
  const writes = [];
  if (WRITES > 0) {
    const before = await catalogTotals(gateway.url, token, teamId);
    for (let round = 1; round <= ROUNDS; round++) {
      const r = await createPipelines(call, gateway.url, token, teamId, {
        prefix: `write-${RUN_ID}-${round}`,
        count: WRITES,
        concurrency: WRITE_CONCURRENCY,
      });
      const w = {
        perS: (WRITES * 1000) / r.wallMs,
        p50: quantile(r.latencies, 0.5),
        p99: quantile(r.latencies, 0.99),
        wallS: r.wallMs / 1000,
      };
      writes.push(w);
      console.log(
        `  round ${round}/${ROUNDS} POST /api/pipelines/: ${w.perS.toFixed(1)} pipelines/s, ` +
          `p50 ${w.p50.toFixed(0)} ms, p99 ${w.p99.toFixed(0)} ms (${WRITES} in ${w.wallS.toFixed(1)} s)`,
      );
    }
    // Every creation must be in the lists: one pipeline and two connectors each.
    const after = await catalogTotals(gateway.url, token, teamId);
    const made = WRITES * ROUNDS;
    if (after.pipelines - before.pipelines !== made || after.connectors - before.connectors !== 2 * made) {
      throw new Error(
        `after ${made} creations the lists count ${after.pipelines - before.pipelines} more pipelines ` +
          `and ${after.connectors - before.connectors} more connectors`,
      );
    }
  }

  const gatewayPeak = peakRssMiB(gateway.child.pid);
  const floorPeak = peakRssMiB(floor.child.pid);
  await stopGateway(gateway);
  floor.child.disconnect();

  const rows = [];
  const summary = [];
  let bad = 0;
  for (const path of endpoints) {
    const { floor: fs, gateway: gs } = samples[path];
    const ratios = gs.map((g, i) => g.rps / fs[i].rps);
    const agg = (xs) => ({
      rps: median(xs.map((x) => x.rps)),
      p50: median(xs.map((x) => x.p50)),
      p99: median(xs.map((x) => x.p99)),
      non2xx: xs.reduce((a, x) => a + x.non2xx, 0),
      errors: xs.reduce((a, x) => a + x.errors, 0),
    });
    const f = agg(fs);
    const g = agg(gs);
    const ratio = median(ratios);
    bad += f.non2xx + f.errors + g.non2xx + g.errors;
    rows.push([label(path), 'gateway', g.rps.toFixed(0), g.p50, g.p99, g.non2xx, g.errors, ratio.toFixed(2)]);
    rows.push([label(path), 'floor', f.rps.toFixed(0), f.p50, f.p99, f.non2xx, f.errors, '1.00']);
    summary.push({ path: label(path), gateway: g, floor: f, ratio, ratios });
  }
  console.log(
    `\n${ROUNDS > 1 ? `Medians of ${ROUNDS} rounds` : 'One round'} (ratio = gateway req/s / floor req/s):`,
  );
  console.log(table(rows));
  let writeSummary;
  if (writes.length) {
    writeSummary = {
      writes: WRITES,
      concurrency: WRITE_CONCURRENCY,
      perS: median(writes.map((w) => w.perS)),
      p50: median(writes.map((w) => w.p50)),
      p99: median(writes.map((w) => w.p99)),
      rounds: writes,
    };
    console.log(
      `POST /api/pipelines/ (${WRITES} creations a round, ${WRITE_CONCURRENCY} at a time, ` +
        `each 2 connectors + 1 data model + 1 subscription): ${writeSummary.perS.toFixed(1)} pipelines/s, ` +
        `p50 ${writeSummary.p50.toFixed(0)} ms, p99 ${writeSummary.p99.toFixed(0)} ms`,
    );
  }
  const fmtMiB = (v) => (v === undefined ? 'n/a' : `${v.toFixed(0)} MiB`);
  console.log(`Peak RSS (VmHWM): gateway ${fmtMiB(gatewayPeak)}, floor ${fmtMiB(floorPeak)}`);
  const missed = summary.filter((s) => s.ratio < GOAL);
  console.log(
    missed.length
      ? `Goal (>= ${GOAL * 100}% of the floor) missed for: ${missed.map((s) => s.path).join(', ')}`
      : `Goal (>= ${GOAL * 100}% of the floor) met for every endpoint`,
  );
  if (CPU_PROF_DIR) console.log(`Gateway CPU profile written to ${CPU_PROF_DIR}`);
  if (JSON_OUT) {
    writeFileSync(
      JSON_OUT,
      JSON.stringify(
        {
          date: started.toISOString(),
          node: process.version,
          database: dbKind,
          logLevel: LOG_LEVEL,
          connections: CONNECTIONS,
          durationS: DURATION_S,
          rounds: ROUNDS,
          peakRssMiB: { gateway: gatewayPeak, floor: floorPeak },
          pipelinesSeeded: PIPELINES,
          seedSeconds,
          endpoints: summary,
          pipelineWrites: writeSummary,
        },
        null,
        2,
      ) + '\n',
    );
  }
  if (bad) {
    console.error(`bench:api: ${bad} non-2xx answers or errors; the figures above are not valid`);
    process.exitCode = 1;
  }
}

const cleanup = () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  rmSync(tmp, { recursive: true, force: true });
};
process.on('SIGINT', () => {
  cleanup();
  process.exit(130);
});

try {
  await main();
} catch (err) {
  console.error(`bench:api: ${err.message}`);
  process.exitCode = 1;
} finally {
  cleanup();
}
