// Operator benchmark (speed and memory): the real operator process
// (`node operator/dist/main.js`) against the real kube-apiserver + etcd of the
// test setup (scripts/with-kube.sh), in a namespace of its own. Pipelines are
// created through the API server in two rounds — up to 1,000 objects, then up
// to 10,000 — and for each one the time from its create request to the
// moment its status (written by the operator) arrives on a watch is
// recorded. Prints p50/p99/max per round, the creation rate the API server
// took, and the operator's resident memory: after its caches synced (the
// baseline), and after each round once it is idle; the per-object figure is
// (RSS after − baseline) / objects. Pipelines are drafts (no workers), so
// this measures the control loop: informer → queue → planner → status patch
// and Event. Usage (after `npm run build`):
//   npm run bench:operator
//   BENCH_OPERATOR_COUNTS=1000,10000 BENCH_OPERATOR_CONCURRENCY=32 npm run bench:operator
/* global performance -- Node 24 global */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  loadYaml,
  Watch,
} from '@kubernetes/client-node';
import { quantile } from '../api/catalog.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const COUNTS = (process.env.BENCH_OPERATOR_COUNTS ?? '1000,10000').split(',').map(Number);
const CONCURRENCY = Number(process.env.BENCH_OPERATOR_CONCURRENCY ?? 32);
/** charts/sluice/values.yaml operator.nodeOptions, as deployed. */
const CHART_NODE_OPTIONS =
  readFileSync(join(ROOT, 'charts/sluice/values.yaml'), 'utf8').match(/^\s+nodeOptions: "([^"]*)"/m)?.[1] ??
  '';
const KUBECONFIG = process.env.SLUICE_TEST_KUBECONFIG ?? process.env.KUBECONFIG;
if (!KUBECONFIG) {
  console.error('no API server: run through scripts/with-kube.sh (npm run bench:operator does)');
  process.exit(2);
}

const kc = new KubeConfig();
kc.loadFromFile(KUBECONFIG);
const core = kc.makeApiClient(CoreV1Api);
const custom = kc.makeApiClient(CustomObjectsApi);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function installCrds() {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const dir = join(ROOT, 'crds');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
    const crd = loadYaml(readFileSync(join(dir, file), 'utf8'));
    await api.createCustomResourceDefinition({ body: crd }).catch((e) => {
      if (e.code !== 409) throw e;
    });
  }
  for (let i = 0; i < 150; i++) {
    const list = await api.listCustomResourceDefinition();
    const established = list.items.filter((c) =>
      c.status?.conditions?.some((x) => x.type === 'Established' && x.status === 'True'),
    );
    if (established.length >= 5) return;
    await sleep(100);
  }
  throw new Error('CRDs not established');
}

/** Resident memory of the operator in bytes (Linux), after a full GC it runs on SIGUSR2. */
async function retained(child) {
  child.kill('SIGUSR2');
  await sleep(1000);
  return rss(child.pid);
}

function rss(pid) {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').match(/^VmRSS:\s+(\d+) kB/m);
  return line ? Number(line[1]) * 1024 : NaN;
}

async function startOperator(namespace, dataDir) {
  const logPath = join(dataDir, 'operator.log');
  const out = openSync(logPath, 'a');
  // BENCH_OPERATOR_NODE_ARGS: node flags of the operator; by default the
  // chart's operator.nodeOptions (add e.g. --cpu-prof to profile it).
  const nodeArgs = (process.env.BENCH_OPERATOR_NODE_ARGS ?? CHART_NODE_OPTIONS).split(' ').filter(Boolean);
  const gcHook = ['--expose-gc', '--require', join(ROOT, 'bench/operator/gc-on-signal.cjs')];
  const child = spawn(process.execPath, [...gcHook, ...nodeArgs, join(ROOT, 'operator/dist/main.js')], {
    env: {
      ...process.env,
      KUBECONFIG,
      SLUICE_NAMESPACE: namespace,
      SLUICE_WORKER_RUNTIME: 'process',
      SLUICE_LEADER_ELECTION: 'false',
      SLUICE_DATA_DIR: dataDir,
    },
    stdio: ['ignore', out, out],
  });
  for (let i = 0; i < 300; i++) {
    if (readFileSync(logPath, 'utf8').includes('caches synced')) return child;
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  throw new Error(`the operator did not start:\n${readFileSync(logPath, 'utf8').slice(-2000)}`);
}

/**
 * Status arrival times by name, from a watch on the namespace's pipelines; a
 * watch that ends is opened again after a list that catches up (those
 * arrivals are then late by the gap, which only makes the figures worse).
 */
async function watchStatuses(namespace, arrived) {
  const path = `/apis/sluice.dev/v1alpha1/namespaces/${namespace}/pipelines`;
  const see = (obj) => {
    if (obj?.status?.observedGeneration && !arrived.has(obj.metadata.name)) {
      arrived.set(obj.metadata.name, performance.now());
    }
  };
  let current;
  let stopped = false;
  const open = async () => {
    const list = await custom.listNamespacedCustomObject({
      group: 'sluice.dev',
      version: 'v1alpha1',
      namespace,
      plural: 'pipelines',
    });
    list.items.forEach(see);
    current = await new Watch(kc).watch(
      path,
      { resourceVersion: list.metadata.resourceVersion, allowWatchBookmarks: true },
      (type, obj) => type !== 'BOOKMARK' && see(obj),
      (err) => {
        if (stopped) return;
        if (err) process.stderr.write(`  (status watch ended: ${err.message}; reopening)\n`);
        setTimeout(() => void open().catch(() => undefined), 200);
      },
    );
  };
  await open();
  return {
    abort: () => {
      stopped = true;
      current?.abort();
    },
  };
}

function pipeline(namespace, name) {
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'Pipeline',
    metadata: { name, namespace },
    spec: {
      name: `bench-${name.slice(0, 8)}`,
      teamId: '00000000-0000-4000-8000-000000000001',
      sourceConnectorId: randomUUID(),
      targetConnectorId: randomUUID(),
      datamodelId: randomUUID(),
      subscriptionId: randomUUID(),
      ownsSource: true,
      ownsTarget: true,
      desiredState: 'draft',
      version: 1,
    },
  };
}

async function round(namespace, count, sent, arrived) {
  const names = Array.from({ length: count }, () => randomUUID());
  const started = performance.now();
  let next = 0;
  const progress = setInterval(() => {
    const statuses = names.filter((n) => arrived.has(n)).length;
    process.stderr.write(`  … ${Math.min(next, count)} created, ${statuses} statuses\n`);
  }, 5000);
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < names.length) {
        const name = names[next++];
        sent.set(name, performance.now());
        await custom.createNamespacedCustomObject({
          group: 'sluice.dev',
          version: 'v1alpha1',
          namespace,
          plural: 'pipelines',
          body: pipeline(namespace, name),
        });
      }
    }),
  );
  const created = performance.now();
  const deadline = Date.now() + 10 * 60_000;
  while (names.some((n) => !arrived.has(n))) {
    if (Date.now() > deadline) throw new Error('statuses did not arrive within 10 minutes');
    await sleep(50);
  }
  const done = performance.now();
  clearInterval(progress);
  const latencies = names.map((n) => arrived.get(n) - sent.get(n)).sort((a, b) => a - b);
  return {
    createPerS: count / ((created - started) / 1000),
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    max: latencies[latencies.length - 1],
    allStatusesS: (done - started) / 1000,
  };
}

/**
 * The steady state at this size: with the round's objects in place and the
 * operator idle, `count` new pipelines created one every `everyMs` (a busy
 * team's pace, not a bulk load), each timed from its create to its status.
 * The bulk round above measures how fast a backlog drains; this measures what
 * a user creating one object waits for in a cluster that holds that many.
 */
async function steady(namespace, sent, arrived, count = 100, everyMs = 100) {
  const names = Array.from({ length: count }, () => randomUUID());
  const creates = [];
  for (const name of names) {
    sent.set(name, performance.now());
    creates.push(
      custom.createNamespacedCustomObject({
        group: 'sluice.dev',
        version: 'v1alpha1',
        namespace,
        plural: 'pipelines',
        body: pipeline(namespace, name),
      }),
    );
    await sleep(everyMs);
  }
  await Promise.all(creates);
  const deadline = Date.now() + 60_000;
  while (names.some((n) => !arrived.has(n))) {
    if (Date.now() > deadline) throw new Error('steady: statuses did not arrive within a minute');
    await sleep(20);
  }
  const latencies = names.map((n) => arrived.get(n) - sent.get(n)).sort((a, b) => a - b);
  return {
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
    max: latencies[latencies.length - 1],
  };
}

async function main() {
  await installCrds();
  const namespace = `bench-${randomUUID().slice(0, 8)}`;
  await core.createNamespace({ body: { metadata: { name: namespace } } });
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-bench-op-'));
  const operator = await startOperator(namespace, dataDir);
  const arrived = new Map();
  const sent = new Map();
  const watch = await watchStatuses(namespace, arrived);
  try {
    await sleep(2000);
    const baseline = await retained(operator);
    console.log(
      `operator baseline RSS ${(baseline / 2 ** 20).toFixed(1)} MiB (caches synced, no objects; every RSS after a full GC)`,
    );
    console.log(
      'objects | bulk: creates/s | create→status p50 | p99 | max | all statuses | steady (+100 at 10/s): p50 | p99 | max | RSS | per object',
    );
    let total = 0;
    for (const target of COUNTS) {
      const r = await round(namespace, target - total, sent, arrived);
      total = target;
      await sleep(3000); // idle: let the operator finish its Events and settle
      const after = await retained(operator);
      const s = await steady(namespace, sent, arrived);
      total += 100;
      await sleep(3000);
      console.log(
        `${String(total - 100).padStart(7)} | ${r.createPerS.toFixed(0).padStart(9)} | ${r.p50.toFixed(0).padStart(14)} ms | ${r.p99.toFixed(0)} ms | ${r.max.toFixed(0)} ms | ${r.allStatusesS.toFixed(1)} s | ${s.p50.toFixed(0)} ms | ${s.p99.toFixed(0)} ms | ${s.max.toFixed(0)} ms | ${(after / 2 ** 20).toFixed(1)} MiB | ${((after - baseline) / (total - 100) / 1024).toFixed(2)} KiB`,
      );
    }
  } finally {
    watch.abort();
    operator.kill('SIGTERM');
    await new Promise((r) => operator.once('exit', r));
    if (process.env.BENCH_OPERATOR_SHOW_MEMORY) {
      console.log(
        readFileSync(join(dataDir, 'operator.log'), 'utf8')
          .split('\n')
          .filter((l) => l.startsWith('bench:'))
          .join('\n'),
      );
    }
    rmSync(dataDir, { recursive: true, force: true });
    // The namespace goes with the throw-away API server (no controller-manager empties it).
  }
}

await main();
