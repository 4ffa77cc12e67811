import { beforeAll, describe, expect, it } from '@jest/globals';
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { RESOURCE_SCHEMAS } from '@sluice/shared/catalog';

// The Argo CD health checks of charts/sluice/argocd, run the way Argo CD runs
// them: scripts/argocd-health (gopher-lua, Argo CD's library set) evaluates
// every case of every health_test.yaml with the health.lua file (standard
// libraries open, as Argo CD runs built-in checks; and closed, as it runs an
// argocd-cm key) and with the script inlined in argocd-cm-patch.yaml.

const root = path.resolve(import.meta.dirname, '..');
const argocdDir = path.join(root, 'charts/sluice/argocd');
const groupDir = path.join(argocdDir, 'sluice.dev');
const cmPatch = path.join(argocdDir, 'argocd-cm-patch.yaml');

interface Health {
  status?: string;
  message?: string;
  deletionMessage?: string;
}
interface RunnerCase {
  key: string;
  kind: string;
  inputPath: string;
  name: string;
  expected: Health | null;
  results: Record<string, { health: Health | null; error?: string }>;
  effective: Health | null;
  pass: boolean;
  failures?: string[];
}
interface RunnerReport {
  modes: string[];
  passed: number;
  failed: number;
  cases: RunnerCase[];
}

const kinds = readdirSync(groupDir, { withFileTypes: true })
  .filter((e) => e.isDirectory())
  .map((e) => e.name)
  .sort();
const testdata = (kind: string) =>
  readdirSync(path.join(groupDir, kind, 'testdata'))
    .filter((f) => f.endsWith('.yaml'))
    .sort();

/** Kinds a user can pause or switch off (spec.desiredState, spec.enabled): they need a Suspended case. */
const PAUSABLE = ['Connector', 'DataModel', 'Pipeline', 'Subscription'];

let report: RunnerReport;
const casesOf = (kind: string) => report.cases.filter((c) => c.key === `sluice.dev/${kind}`);

beforeAll(() => {
  // Built once per machine into ~/.cache/sluice/tools; a cold build takes about a minute.
  const bin = execFileSync(path.join(root, 'scripts/argocd-health/build.sh'), {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  const run = spawnSync(bin, ['-cm', cmPatch, argocdDir], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (run.status !== 0 && run.status !== 1) {
    throw new Error(`argocd-health exited ${run.status ?? run.signal}: ${run.stderr}`);
  }
  report = JSON.parse(run.stdout) as RunnerReport;
}, 600_000);

describe('Argo CD health checks (charts/sluice/argocd)', () => {
  it('has one check per kind of sluice.dev/v1alpha1', () => {
    expect(kinds).toEqual(Object.keys(RESOURCE_SCHEMAS).sort());
  });

  it('runs every case in the three modes', () => {
    expect(report.modes).toEqual(['builtin', 'restricted', 'argocd-cm']);
    expect(report.cases.length).toBe(kinds.reduce((n, k) => n + testdata(k).length, 0));
  });

  for (const kind of kinds) {
    for (const file of testdata(kind)) {
      it(`${kind} ${file.replace(/\.yaml$/, '')}`, () => {
        const c = casesOf(kind).find((x) => x.inputPath === `testdata/${file}`);
        if (!c) throw new Error(`no case of ${kind}/health_test.yaml has inputPath testdata/${file}`);
        expect(c.kind).toBe(kind);
        expect(c.expected).not.toBeNull();
        for (const mode of report.modes) {
          expect({ mode, ...c.results[mode] }).toEqual({ mode, health: c.expected });
        }
        expect(c.failures ?? []).toEqual([]);
        expect(c.pass).toBe(true);
      });
    }
  }

  it.each(kinds)('%s has the Healthy, Progressing, Degraded (and Suspended) cases', (kind) => {
    const expected = casesOf(kind).map((c) => c.expected ?? {});
    const statuses = new Set(expected.map((h) => h.status));
    const wanted = ['Healthy', 'Progressing', 'Degraded', ...(PAUSABLE.includes(kind) ? ['Suspended'] : [])];
    expect(wanted.filter((s) => !statuses.has(s))).toEqual([]);
    const messages = expected.filter((h) => h.status === 'Progressing').map((h) => h.message ?? '');
    expect(messages).toContain('Waiting for the operator');
    expect(messages.some((m) => m.startsWith('Waiting for the operator to observe generation '))).toBe(true);
    expect(messages.some((m) => m.startsWith('Being deleted'))).toBe(true);
  });

  it('keeps a deleted object Progressing "Being deleted" on Argo CD 3.6+ too (deletionMessage)', () => {
    const deleting = report.cases.filter((c) => c.expected?.deletionMessage);
    expect(deleting.map((c) => c.key).sort()).toEqual(kinds.map((k) => `sluice.dev/${k}`));
    for (const c of deleting) {
      expect(c.effective).toEqual({ status: 'Progressing', message: c.expected?.deletionMessage });
    }
  });

  it('argocd-cm-patch.yaml is generated from the health.lua files', () => {
    const generated = execFileSync(
      process.execPath,
      [path.join(root, 'scripts/argocd-health/gen-cm-patch.js'), '--stdout'],
      { encoding: 'utf8' },
    );
    expect(readFileSync(cmPatch, 'utf8')).toBe(generated);
  });

  it('the shared helpers are the same in every script', () => {
    const block = (kind: string) =>
      /-- BEGIN shared helpers\n[\s\S]*?-- END shared helpers\n/.exec(
        readFileSync(path.join(groupDir, kind, 'health.lua'), 'utf8'),
      )?.[0];
    const first = block('Connector');
    expect(first).toBeDefined();
    for (const kind of kinds) expect({ kind, helpers: block(kind) }).toEqual({ kind, helpers: first });
  });

  it('the README names every argocd-cm key', () => {
    const readme = readFileSync(path.join(argocdDir, 'README.md'), 'utf8');
    for (const kind of kinds) expect(readme).toContain(`resource.customizations.health.sluice.dev_${kind}:`);
  });
});
