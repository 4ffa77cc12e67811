// Where a worker's time went, from the CPU profile Node writes with
// `--cpu-prof` (a .cpuprofile): self time by part (idle, garbage collection,
// the Kafka client, mysql2 or pg, each file of the worker's own code,
// Node's internals, built-ins such as JSON.stringify) and the functions
// that took the most, as percentages of the profile's whole span.
// `--after-s S` leaves out the first S seconds (the program's start-up: the
// bench prints how long it took, as the rate from the process start).
// Usage: node bench/cdc/profile.js <file.cpuprofile> [--top 15] [--after-s 1.5]
import { readFileSync } from 'node:fs';
import { option } from '../pipeline/report.js';

const file = process.argv[2];
if (!file || file.startsWith('--')) {
  console.error('usage: node bench/cdc/profile.js <file.cpuprofile> [--top 15] [--after-s 1.5]');
  process.exit(64);
}
const TOP = Number(option('--top', '15'));
const AFTER_US = Number(option('--after-s', '0')) * 1e6;
const profile = JSON.parse(readFileSync(file, 'utf8'));

// Each sample's time is the delta to the next one; a node's self time is the sum over its samples.
const selfUs = new Map();
let at = 0;
let total = 0;
profile.samples.forEach((id, i) => {
  at += profile.timeDeltas[i];
  const dt = profile.timeDeltas[i + 1] ?? 0;
  if (at < AFTER_US) return;
  selfUs.set(id, (selfUs.get(id) ?? 0) + dt);
  total += dt;
});

const partOf = ({ functionName, url }) => {
  if (['(idle)', '(garbage collector)', '(program)'].includes(functionName)) return functionName;
  const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1];
  const own = /\/(dataplane|shared)\/dist\/(.+)$/.exec(url);
  if (own) return `${own[1]}/${own[2]}`;
  if (url.startsWith('node:')) return url.replace('node:internal/', 'node ');
  return url ? url : `built-in ${functionName || '(anonymous)'}`;
};

const parts = new Map();
const functions = new Map();
for (const node of profile.nodes) {
  const us = selfUs.get(node.id) ?? 0;
  if (!us) continue;
  const part = partOf(node.callFrame);
  parts.set(part, (parts.get(part) ?? 0) + us);
  const name = `${node.callFrame.functionName || '(anonymous)'} ${part}:${node.callFrame.lineNumber + 1}`;
  functions.set(name, (functions.get(name) ?? 0) + us);
}
const share = (us) => `${((us / total) * 100).toFixed(1)}%`;
const sorted = (m) => [...m].sort((a, b) => b[1] - a[1]);
console.log(
  `${file}: ${(total / 1e6).toFixed(1)} s profiled${AFTER_US ? ` after the first ${AFTER_US / 1e6} s` : ''}\n\nBy part (self time):`,
);
for (const [part, us] of sorted(parts).slice(0, TOP)) console.log(`  ${share(us).padStart(6)}  ${part}`);
console.log('\nFunctions (self time):');
for (const [name, us] of sorted(functions).slice(0, TOP)) console.log(`  ${share(us).padStart(6)}  ${name}`);
