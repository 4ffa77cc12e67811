import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { load, loadAll } from 'js-yaml';
import { DEFAULT_WORKER_NODE_OPTIONS } from '@sluice/shared/ports';

// The Helm chart (charts/sluice), its values schema, and the Dockerfile, checked
// the way a user would meet them: `helm lint`, `helm template` with the default
// values and with every option switched, kubeconform -strict on every rendered
// manifest, least-privilege RBAC compared rule by rule. No cluster is needed.
//
// helm and kubeconform are built from Go modules on first use and cached in
// ~/.cache/sluice/tools (scripts/tools/ensure-tool.sh, several minutes on two
// cores); kubeconform's Kubernetes schemas are generated from the OpenAPI
// document of the k8s.io/kubernetes module (it cannot reach GitHub here), and
// the schemas of our own kinds from charts/sluice/crds at test time
// (scripts/tools/openapi2jsonschema.mjs). Without Go and without the cache the
// suite fails, it never skips silently.

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CHART = join(ROOT, 'charts/sluice');
const DEFAULT_VALUES = join(CHART, 'ci/default-values.yaml');
const OPTIONS_VALUES = join(CHART, 'ci/options-values.yaml');
const NS = 'sluice';
/** The default worker namespace: `<release namespace>-workers`. */
const WNS = 'sluice-workers';
const RELEASE = 'sluice';
const K8S_VERSION = '1.37.2';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function run(cmd: string, args: string[], input?: string, timeoutMs = 120_000): Promise<Run> {
  return new Promise((done) => {
    const child = execFile(
      cmd,
      args,
      { cwd: ROOT, maxBuffer: 64 * 1024 * 1024, timeout: timeoutMs },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        done({
          code,
          stdout: String(stdout),
          stderr: String(stderr) + (err && code === 1 ? err.message : ''),
        });
      },
    );
    if (input !== undefined) child.stdin?.end(input);
  });
}

async function ensureTool(name: string): Promise<string> {
  const r = await run('bash', [join(ROOT, 'scripts/tools/ensure-tool.sh'), name], undefined, 20 * 60_000);
  if (r.code !== 0) throw new Error(`ensure-tool.sh ${name} failed (${r.code}):\n${r.stderr}`);
  return r.stdout.trim();
}

// ---------------------------------------------------------------------------
// Manifests

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  [key: string]: unknown;
}
/* eslint-disable @typescript-eslint/no-explicit-any -- manifests are walked as plain data */
type Any = any;

let helmBin = '';
let kubeconformBin = '';
let kubeSchemas = '';

async function helm(args: string[]): Promise<Run> {
  return run(helmBin, args);
}

async function render(values: string[] = [DEFAULT_VALUES], set: string[] = []): Promise<K8sObject[]> {
  const args = ['template', RELEASE, CHART, '--namespace', NS];
  for (const v of values) args.push('-f', v);
  for (const s of set) args.push('--set', s);
  const r = await helm(args);
  if (r.code !== 0) throw new Error(`helm ${args.join(' ')} failed:\n${r.stderr}`);
  return (loadAll(r.stdout) as (K8sObject | null)[]).filter((d): d is K8sObject => d !== null);
}

/** `helm template` of the default values with these `--set`s, as helm answered (for the refusals). */
function templateSetting(set: string[]) {
  return helm(['template', RELEASE, CHART, '-f', DEFAULT_VALUES, ...set.flatMap((s) => ['--set', s])]);
}

function find(docs: K8sObject[], kind: string, name: string, namespace?: string): Any {
  const found = docs.filter(
    (d) =>
      d.kind === kind &&
      d.metadata.name === name &&
      (namespace === undefined || d.metadata.namespace === namespace),
  );
  if (found.length !== 1) {
    throw new Error(
      `expected one ${kind} ${name}, found ${found.length} (${docs.map((d) => `${d.kind}/${d.metadata.name}`).join(', ')})`,
    );
  }
  return found[0];
}

const kinds = (docs: K8sObject[]) =>
  docs
    .map((d) => d.kind)
    .sort()
    .reduce<Record<string, number>>((acc, k) => ({ ...acc, [k]: (acc[k] ?? 0) + 1 }), {});

const env = (container: Any, name: string): Any => {
  const found = (container.env as Any[]).filter((e) => e.name === name);
  if (found.length !== 1)
    throw new Error(`expected one env ${name} in ${container.name}, found ${found.length}`);
  return found[0];
};

interface KubeconformResult {
  summary: { valid: number; invalid: number; errors: number; skipped: number };
  resources: { kind: string; name: string; status: string; msg: string }[];
}

/** kubeconform -strict over YAML text; every resource must be valid, none skipped. */
async function kubeconform(yaml: string, schemaLocations: string[]): Promise<KubeconformResult> {
  const args = ['-strict', '-summary', '-output', 'json', '-kubernetes-version', K8S_VERSION];
  for (const s of schemaLocations) args.push('-schema-location', s);
  args.push('-');
  const r = await run(kubeconformBin, args, yaml);
  let parsed: KubeconformResult;
  try {
    parsed = JSON.parse(r.stdout) as KubeconformResult;
  } catch {
    throw new Error(`kubeconform printed no JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
  return parsed;
}

function expectAllValid(result: KubeconformResult, count: number): void {
  const problems = result.resources.filter((r) => r.status !== 'statusValid');
  expect(problems.map((p) => `${p.kind}/${p.name}: ${p.msg}`)).toEqual([]);
  expect(result.summary).toEqual({ valid: count, invalid: 0, errors: 0, skipped: 0 });
}

const dumpDocs = (docs: unknown[]) => docs.map((d) => JSON.stringify(d)).join('\n---\n');

// ---------------------------------------------------------------------------
// RBAC: the permissions each service account ends up with, one string per
// (scope, group, resource, verb[, name]), from every Role/ClusterRole bound to it.

const KINDS = ['connectors', 'datamodels', 'subscriptions', 'pipelines', 'warehouses'];
const ALL = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
const READ = ['get', 'list', 'watch'];

function grants(scope: string, group: string, resources: string[], verbs: string[], name?: string): string[] {
  return resources.flatMap((r) =>
    verbs.map((v) => `${scope} ${group || 'core'} ${r} ${v}${name ? ` ${name}` : ''}`),
  );
}

function permissions(docs: K8sObject[], serviceAccount: string): string[] {
  const out = new Set<string>();
  for (const b of docs.filter((d) => d.kind === 'RoleBinding' || d.kind === 'ClusterRoleBinding') as Any[]) {
    const bound = (b.subjects as Any[]).some(
      (s) => s.kind === 'ServiceAccount' && s.name === serviceAccount && s.namespace === NS,
    );
    if (!bound) continue;
    const role = find(
      docs,
      b.roleRef.kind,
      b.roleRef.name,
      b.kind === 'RoleBinding' ? b.metadata.namespace : undefined,
    );
    const scope = b.kind === 'ClusterRoleBinding' ? '*' : b.metadata.namespace;
    if (b.kind === 'RoleBinding') expect(role.metadata.namespace).toBe(b.metadata.namespace);
    for (const rule of role.rules as Any[]) {
      for (const g of rule.apiGroups as string[]) {
        const names: (string | undefined)[] = rule.resourceNames ?? [undefined];
        for (const n of names) grants(scope, g, rule.resources, rule.verbs, n).forEach((p) => out.add(p));
      }
    }
  }
  return [...out].sort();
}

/** The gateway's hold on the kinds of a namespace it mirrors: it reads them, and writes them by id. */
const gatewayKinds = (ns: string) => [
  ...grants(ns, 'sluice.dev', KINDS, ALL),
  ...grants(
    ns,
    'sluice.dev',
    KINDS.map((k) => `${k}/status`),
    ['get', 'update', 'patch'],
  ),
];
/** In the worker namespace: Secrets, and the workers read only (it serves their logs). */
const gatewayWorkers = (ns: string) => [
  ...grants(ns, '', ['secrets'], ALL),
  ...grants(ns, 'apps', ['deployments'], READ),
  ...grants(ns, '', ['pods'], READ),
  ...grants(ns, '', ['pods/log'], ['get']),
];
const operatorReconcile = (ns: string) => [
  ...grants(ns, 'sluice.dev', KINDS, ['get', 'list', 'watch', 'update', 'patch']),
  ...grants(
    ns,
    'sluice.dev',
    KINDS.map((k) => `${k}/status`),
    ['get', 'update', 'patch'],
  ),
  ...grants(
    ns,
    'sluice.dev',
    KINDS.map((k) => `${k}/finalizers`),
    ['update'],
  ),
  // A deleted connector's data models go with it (connector.plan.ts).
  ...grants(ns, 'sluice.dev', ['datamodels'], ['delete']),
  ...grants(ns, '', ['events'], ['create', 'patch']),
  ...grants(ns, 'events.k8s.io', ['events'], ['create', 'patch']),
];
/** The operator in the release namespace: its Lease, and what an earlier release left there to move. */
const operatorHome = (ns: string, lease: string, move: boolean) => [
  ...grants(ns, 'coordination.k8s.io', ['leases'], ['create']),
  ...grants(ns, 'coordination.k8s.io', ['leases'], ['get', 'update', 'patch'], lease),
  ...(move ? grants(ns, '', ['secrets'], ['get', 'list', 'delete']) : []),
  ...(move ? grants(ns, 'apps', ['deployments'], ['list', 'delete']) : []),
];
/** In the worker namespace: the workers, their pods and logs, their Secrets (written only to move them in). */
const operatorWorkers = (ns: string, move: boolean) => [
  ...grants(ns, 'apps', ['deployments'], ALL),
  ...grants(ns, '', ['pods'], READ),
  ...grants(ns, '', ['pods/log'], ['get']),
  ...grants(ns, '', ['secrets'], ['get', 'list', 'watch', 'delete', ...(move ? ['create', 'update'] : [])]),
];
const sorted = (xs: string[]) => [...new Set(xs)].sort();

// ---------------------------------------------------------------------------

describe('Helm chart charts/sluice', () => {
  beforeAll(async () => {
    // Sequential: the first builds share two cores.
    helmBin = await ensureTool('helm');
    kubeconformBin = await ensureTool('kubeconform');
    kubeSchemas = await ensureTool('kube-schemas');
  }, 20 * 60_000);

  describe('helm lint', () => {
    it.each([
      ['the smallest values (ci/default-values.yaml)', DEFAULT_VALUES],
      ['every option switched (ci/options-values.yaml)', OPTIONS_VALUES],
    ])('passes --strict with %s', async (_label, values) => {
      for (const strict of [[], ['--strict']]) {
        const r = await helm(['lint', ...strict, CHART, '-f', values]);
        expect({ code: r.code, out: r.stdout + r.stderr }).toEqual({
          code: 0,
          out: expect.stringContaining('0 chart(s) failed'),
        });
        expect(r.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
      }
    });

    it('passes --strict without values, while install names the missing database', async () => {
      // helm lint only logs `fail` calls (lint mode); template/install stop on them.
      const lint = await helm(['lint', '--strict', CHART]);
      expect(lint.code).toBe(0);
      const r = await helm(['template', RELEASE, CHART]);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain('set postgresql.url or postgresql.existingSecret');
    });
  });

  describe('Chart.yaml', () => {
    it('is apiVersion v2 with appVersion = the package version', () => {
      const chart = load(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as Any;
      const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string };
      expect(chart.apiVersion).toBe('v2');
      expect(chart.name).toBe('sluice');
      expect(chart.appVersion).toBe(pkg.version);
    });
  });

  describe('values.schema.json', () => {
    it.each([
      [['operator.replicas=abc'], "at '/operator/replicas'"],
      [['gateway.bogus=1'], "additional properties 'bogus' not allowed"],
      [['image.pullPolicy=Sometimes'], "at '/image/pullPolicy'"],
      [
        ['gateway.podDisruptionBudget.maxUnavailable=half'],
        "at '/gateway/podDisruptionBudget/maxUnavailable'",
      ],
      [['rbac.extraNamespaces[0]=Not_A_Namespace'], "at '/rbac/extraNamespaces/0'"],
      [['workers.namespace=Not_A_Namespace'], "at '/workers/namespace'"],
    ])('makes helm refuse --set %j', async (set, message) => {
      const r = await templateSetting(set);
      expect(r.code).not.toBe(0);
      expect(r.stderr).toContain("values don't meet the specifications of the schema");
      expect(r.stderr).toContain(message);
    });

    it('is draft-07, strict, and describes every value of values.yaml', () => {
      const schema = JSON.parse(readFileSync(join(CHART, 'values.schema.json'), 'utf8')) as Any;
      const values = load(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Any;
      expect(schema.$schema).toBe('http://json-schema.org/draft-07/schema#');
      const deref = (s: Any): Any =>
        s?.$ref ? deref(schema.definitions[s.$ref.replace('#/definitions/', '')]) : s;
      const undescribed: string[] = [];
      const notStrict: string[] = [];
      const walk = (value: Any, s: Any, path: string) => {
        s = deref(s);
        if (value === null || typeof value !== 'object' || Array.isArray(value)) return;
        if (s.properties === undefined) return; // a map (labels, annotations) or a pass-through Kubernetes object
        if (s.additionalProperties !== false) notStrict.push(path);
        for (const [k, v] of Object.entries(value)) {
          if (!(k in s.properties)) undescribed.push(`${path}.${k}`);
          else walk(v, s.properties[k], `${path}.${k}`);
        }
      };
      walk(values, schema, '');
      expect(undescribed).toEqual([]);
      expect(notStrict).toEqual([]);
    });
  });

  describe('with the default values', () => {
    let docs: K8sObject[];
    beforeAll(async () => {
      docs = await render();
    });

    it('renders the gateway, the operator, their RBAC, the worker namespace and nothing optional', () => {
      expect(kinds(docs)).toEqual({
        ConfigMap: 1,
        Deployment: 2,
        Job: 1,
        Namespace: 1,
        PodDisruptionBudget: 2,
        Role: 6,
        RoleBinding: 6,
        Secret: 2,
        Service: 1,
        ServiceAccount: 4,
      });
      // The worker namespace holds the workers' service account and the Roles there, nothing else.
      const inWorkers = docs
        .filter((d) => d.metadata.namespace === WNS)
        .map((d) => `${d.kind}/${d.metadata.name}`);
      expect(inWorkers.sort()).toEqual(
        [
          'Role/sluice-gateway-workers',
          'Role/sluice-operator-workers',
          'Role/sluice-uninstall-workers',
          'RoleBinding/sluice-gateway-workers',
          'RoleBinding/sluice-operator-workers',
          'RoleBinding/sluice-uninstall-workers',
          'ServiceAccount/sluice-worker',
        ].sort(),
      );
      for (const d of docs) {
        if (d.metadata.namespace !== undefined && d.metadata.namespace !== WNS) {
          expect(d.metadata.namespace).toBe(NS);
        }
      }
    });

    it("keeps workers and their Secrets in a namespace apart from the control plane's Secrets", () => {
      const ns = find(docs, 'Namespace', WNS);
      // `helm uninstall` must not delete the Secrets users made there.
      expect(ns.metadata.annotations['helm.sh/resource-policy']).toBe('keep');
      for (const name of ['sluice-gateway', 'sluice-operator']) {
        const [c] = find(docs, 'Deployment', name).spec.template.spec.containers;
        expect(env(c, 'SLUICE_NAMESPACE').value).toBe(NS);
        expect(env(c, 'SLUICE_WORKER_NAMESPACE').value).toBe(WNS);
      }
      // The control plane's Secrets stay in the release namespace, out of the gateway's reach.
      const secrets = docs.filter((d) => d.kind === 'Secret');
      expect(secrets.map((d) => d.metadata.namespace)).toEqual([NS, NS]);
      expect(permissions(docs, 'sluice-gateway').filter((g) => g.startsWith(`${NS} core secrets`))).toEqual(
        [],
      );
      expect(find(docs, 'ServiceAccount', 'sluice-worker', WNS).automountServiceAccountToken).toBe(false);
    });

    it('probes the gateway on /api/livez and /api/readyz', () => {
      const [c] = find(docs, 'Deployment', 'sluice-gateway').spec.template.spec.containers;
      expect(c.ports).toEqual([{ name: 'http', containerPort: 8080, protocol: 'TCP' }]);
      expect(c.livenessProbe.httpGet).toEqual({ path: '/api/livez', port: 'http' });
      expect(c.readinessProbe.httpGet).toEqual({ path: '/api/readyz', port: 'http' });
      expect(c.startupProbe.httpGet).toEqual({ path: '/api/livez', port: 'http' });
      expect(find(docs, 'Service', 'sluice-gateway').spec.ports).toEqual([
        { name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' },
      ]);
    });

    it('runs the gateway on the Kubernetes adapter with its secrets from Secrets', () => {
      const dep = find(docs, 'Deployment', 'sluice-gateway');
      const [c] = dep.spec.template.spec.containers;
      expect(dep.spec.replicas).toBe(2);
      expect(c.image).toBe('sluice:0.1.0');
      expect(c.args).toEqual(['gateway/dist/main.js']);
      expect(env(c, 'SLUICE_CLUSTER_ADAPTER').value).toBe('kubernetes');
      expect(env(c, 'SLUICE_NAMESPACE').value).toBe(NS);
      expect(env(c, 'SLUICE_DATA_DIR').value).toBe('/var/lib/sluice');
      expect(env(c, 'DATABASE_URL').valueFrom.secretKeyRef).toEqual({
        name: 'sluice-database',
        key: 'database-url',
      });
      expect(env(c, 'SLUICE_MASTER_KEY').valueFrom.secretKeyRef).toEqual({
        name: 'sluice-keys',
        key: 'master-key',
      });
      expect(env(c, 'SLUICE_JWT_SECRET').valueFrom.secretKeyRef).toEqual({
        name: 'sluice-keys',
        key: 'jwt-secret',
      });
      expect(JSON.stringify(c.env)).not.toContain('postgres://');

      const keys = find(docs, 'Secret', 'sluice-keys');
      expect(keys.metadata.annotations['helm.sh/resource-policy']).toBe('keep');
      for (const k of ['master-key', 'jwt-secret']) {
        expect(Buffer.from(keys.data[k], 'base64').toString().length).toBeGreaterThanOrEqual(32);
      }
      const db = find(docs, 'Secret', 'sluice-database');
      expect(Buffer.from(db.data['database-url'], 'base64').toString()).toMatch(/^postgres:\/\//);
      // The control plane's Secrets are never usable by a secret field (docs/security.md).
      for (const s of [keys, db]) expect(s.metadata.labels['sluice.dev/control-plane']).toBe('true');
    });

    it('runs two operators that elect a leader through a Lease', () => {
      const dep = find(docs, 'Deployment', 'sluice-operator');
      const [c] = dep.spec.template.spec.containers;
      expect(dep.spec.replicas).toBe(2);
      expect(c.args).toEqual(['operator/dist/main.js']);
      expect(env(c, 'POD_NAMESPACE').valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.namespace' } });
      expect(env(c, 'POD_NAME').valueFrom).toEqual({ fieldRef: { fieldPath: 'metadata.name' } });
      expect(env(c, 'SLUICE_LEADER_ELECTION').value).toBe('true');
      expect(env(c, 'SLUICE_LEASE_NAME').value).toBe('sluice-operator');
      expect(env(c, 'SLUICE_CLUSTER_ADAPTER').value).toBe('kubernetes');
      expect(env(c, 'SLUICE_WATCH_NAMESPACES').value).toBe(NS);
      expect(find(docs, 'PodDisruptionBudget', 'sluice-operator').spec.maxUnavailable).toBe(1);
      expect(find(docs, 'PodDisruptionBudget', 'sluice-gateway').spec.maxUnavailable).toBe(1);
    });

    it('runs every pod as uid 10001, read-only, without capabilities, with RuntimeDefault seccomp', () => {
      const template = JSON.parse(
        find(docs, 'ConfigMap', 'sluice-worker-template').data['pod-template.json'],
      );
      const pods: [string, Any][] = [
        ['gateway', find(docs, 'Deployment', 'sluice-gateway').spec.template.spec],
        ['operator', find(docs, 'Deployment', 'sluice-operator').spec.template.spec],
        ['worker', template.spec],
      ];
      for (const [name, pod] of pods) {
        expect({ name, ...pod.securityContext }).toMatchObject({
          name,
          runAsNonRoot: true,
          runAsUser: 10001,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        const tmp = (pod.volumes as Any[]).find((v) => v.emptyDir && v.name === 'tmp');
        expect(tmp).toBeDefined();
        for (const c of pod.containers as Any[]) {
          expect({ name, ...c.securityContext }).toMatchObject({
            name,
            runAsNonRoot: true,
            runAsUser: 10001,
            readOnlyRootFilesystem: true,
            allowPrivilegeEscalation: false,
            capabilities: { drop: ['ALL'] },
            seccompProfile: { type: 'RuntimeDefault' },
          });
          expect(c.volumeMounts).toContainEqual({ name: 'tmp', mountPath: '/tmp' });
          expect(c.resources.requests).toBeDefined();
          expect(c.resources.limits.memory).toBeDefined();
        }
      }
      expect(template.spec.serviceAccountName).toBe('sluice-worker');
      expect(template.spec.automountServiceAccountToken).toBe(false);
      expect(template.spec.containers[0].args).toEqual(['dataplane/dist/main.js']);
      // The workers' heap bounds: the process runtime's default, one value.
      expect(template.spec.containers[0].env).toContainEqual({
        name: 'NODE_OPTIONS',
        value: DEFAULT_WORKER_NODE_OPTIONS,
      });
    });

    it('gives each service account exactly the permissions it needs', () => {
      expect(permissions(docs, 'sluice-gateway')).toEqual(
        sorted([...gatewayKinds(NS), ...gatewayWorkers(WNS)]),
      );
      expect(permissions(docs, 'sluice-operator')).toEqual(
        sorted([
          ...operatorReconcile(NS),
          ...operatorHome(NS, 'sluice-operator', true),
          ...operatorWorkers(WNS, true),
        ]),
      );
      expect(permissions(docs, 'sluice-worker')).toEqual([]);
      expect(find(docs, 'ServiceAccount', 'sluice-worker').automountServiceAccountToken).toBe(false);
      for (const role of docs.filter((d) => d.kind.endsWith('Role')) as Any[]) {
        for (const rule of role.rules as Any[]) {
          expect([...rule.apiGroups, ...rule.resources, ...rule.verbs]).not.toContain('*');
        }
      }
    });

    it('validates with kubeconform -strict, the worker pod template included', async () => {
      const template = JSON.parse(
        find(docs, 'ConfigMap', 'sluice-worker-template').data['pod-template.json'],
      );
      const podTemplate = { apiVersion: 'v1', kind: 'PodTemplate', metadata: { name: 'worker' }, template };
      expectAllValid(await kubeconform(dumpDocs([...docs, podTemplate]), [kubeSchemas]), docs.length + 1);
    });
  });

  describe('with every option switched (ci/options-values.yaml)', () => {
    let docs: K8sObject[];
    beforeAll(async () => {
      docs = await render([OPTIONS_VALUES]);
    });

    it('renders an Ingress, ClusterRoles, and no generated Secret', () => {
      expect(kinds(docs)).toEqual({
        ClusterRole: 2,
        ClusterRoleBinding: 2,
        ConfigMap: 1,
        Deployment: 2,
        Ingress: 1,
        PodDisruptionBudget: 2,
        Role: 3,
        RoleBinding: 3,
        Service: 1,
        ServiceAccount: 2,
      });
      const ing = find(docs, 'Ingress', 'acme-sluice-gateway');
      expect(ing.spec.ingressClassName).toBe('nginx');
      expect(ing.spec.tls).toEqual([{ secretName: 'sluice-tls', hosts: ['sluice.example.com'] }]);
      expect(ing.spec.rules[0].http.paths[0]).toEqual({
        path: '/api',
        pathType: 'Prefix',
        backend: { service: { name: 'acme-sluice-gateway', port: { name: 'http' } } },
      });
      for (const d of docs) expect(d.metadata.labels?.team).toBe('data-platform');
    });

    it('reads the database, master key, JWT, SMTP and admin secrets from the existing Secrets', () => {
      const [c] = find(docs, 'Deployment', 'acme-sluice-gateway').spec.template.spec.containers;
      expect(env(c, 'DATABASE_URL').valueFrom.secretKeyRef).toEqual({ name: 'sluice-db', key: 'url' });
      expect(env(c, 'SLUICE_MASTER_KEY').valueFrom.secretKeyRef).toEqual({
        name: 'sluice-master-key',
        key: 'key',
      });
      expect(env(c, 'SLUICE_JWT_SECRET').valueFrom.secretKeyRef).toEqual({
        name: 'sluice-jwt',
        key: 'secret',
      });
      expect(env(c, 'SMTP_URL').valueFrom.secretKeyRef).toEqual({ name: 'sluice-smtp', key: 'smtp-url' });
      expect(env(c, 'SLUICE_ADMIN_PASSWORD').valueFrom.secretKeyRef).toEqual({
        name: 'sluice-admin',
        key: 'password',
      });
      expect(env(c, 'SLUICE_CORS_ORIGINS').value).toBe('https://app.example.com,https://admin.example.com');
      expect(env(c, 'SLUICE_DEPLOYMENT_MODE').value).toBe('CLOUD');
      expect(env(c, 'SLUICE_WATCH_NAMESPACES').value).toBe('*');
      expect(env(c, 'SLUICE_BCRYPT_COST').value).toBe('13');
    });

    it('uses the pinned images, pull secrets and disruption budgets', () => {
      const gw = find(docs, 'Deployment', 'acme-sluice-gateway').spec.template.spec;
      const op = find(docs, 'Deployment', 'acme-sluice-operator').spec.template.spec;
      expect(gw.containers[0].image).toBe(
        'registry.example.com/sluice/sluice@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
      );
      expect(op.containers[0].image).toBe('registry.example.com/sluice/sluice:0.1.0-rc.1');
      expect(op.containers[0].imagePullPolicy).toBe('Always');
      expect(gw.imagePullSecrets).toEqual([{ name: 'regcred' }]);
      expect(gw.serviceAccountName).toBe('sluice-api');
      // The gateway reads database sources' streams too (previews, automatic re-snapshots).
      expect(env(gw.containers[0], 'SLUICE_STREAM_BROKERS').value).toBe(
        'kafka-0.kafka:9092,kafka-1.kafka:9092',
      );
      expect(op.containers[0].livenessProbe).toEqual({ httpGet: { path: '/healthz', port: 8081 } });
      expect(find(docs, 'PodDisruptionBudget', 'acme-sluice-gateway').spec).toMatchObject({
        minAvailable: 2,
      });
      expect(find(docs, 'PodDisruptionBudget', 'acme-sluice-gateway').spec.maxUnavailable).toBeUndefined();
      expect(find(docs, 'PodDisruptionBudget', 'acme-sluice-operator').spec.maxUnavailable).toBe('50%');
      const worker = JSON.parse(
        find(docs, 'ConfigMap', 'acme-sluice-worker-template').data['pod-template.json'],
      );
      expect(worker.spec.serviceAccountName).toBe('sluice-workers');
      expect(worker.spec.containers[0].image).toBe('registry.example.com/sluice/sluice-worker:0.1.0-rc.1');
      expect(worker.spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
      expect(worker.metadata.labels['cost-center']).toBe('cdc');
      // The target loop's tuning reaches the workers, after the chart's own variables.
      expect(worker.spec.containers[0].env).toEqual([
        { name: 'SLUICE_STREAM_BROKERS', value: 'kafka-0.kafka:9092,kafka-1.kafka:9092' },
        { name: 'NODE_OPTIONS', value: DEFAULT_WORKER_NODE_OPTIONS },
        { name: 'SLUICE_BATCH_SIZE', value: '2000' },
        { name: 'SLUICE_FETCH_MAX_BYTES', value: '8388608' },
      ]);
    });

    it.each(['NODE_OPTIONS', 'SLUICE_STREAM_BROKERS', 'SLUICE_SECRET_0123'])(
      'refuses workers.extraEnv setting %s, which the chart or the operator sets',
      async (name) => {
        const r = await templateSetting([`workers.extraEnv[0].name=${name}`, 'workers.extraEnv[0].value=x']);
        expect(r.code).not.toBe(0);
        expect(r.stderr).toContain(`workers.extraEnv: ${name} is set by the chart or the operator`);
      },
    );

    it('holds sluice.dev objects cluster-wide but keeps Secrets, Deployments and the Lease namespaced', () => {
      // workers.namespace given, made beforehand (no Namespace), nothing to move.
      expect(permissions(docs, 'sluice-api')).toEqual(
        sorted([...gatewayKinds('*'), ...gatewayWorkers('sluice-dataplane')]),
      );
      expect(permissions(docs, 'acme-sluice-operator')).toEqual(
        sorted([
          ...operatorReconcile('*'),
          ...operatorHome(NS, 'acme-sluice-leader', false),
          ...operatorWorkers('sluice-dataplane', false),
        ]),
      );
      expect(permissions(docs, 'sluice-workers')).toEqual([]);
      const op = find(docs, 'Deployment', 'acme-sluice-operator').spec.template.spec.containers[0];
      expect(env(op, 'SLUICE_LEASE_NAME').value).toBe('acme-sluice-leader');
      expect(env(op, 'SLUICE_WATCH_NAMESPACES').value).toBe('*');
      expect(env(op, 'SLUICE_WORKER_NAMESPACE').value).toBe('sluice-dataplane');
    });

    it('validates with kubeconform -strict', async () => {
      expectAllValid(await kubeconform(dumpDocs(docs), [kubeSchemas]), docs.length);
    });
  });

  describe('with extra namespaces (namespaced RBAC)', () => {
    let docs: K8sObject[];
    beforeAll(async () => {
      docs = await render([DEFAULT_VALUES], ['rbac.extraNamespaces={team-a,team-b}']);
    });

    it('adds Roles there: the operator reconciles, the gateway mirrors and writes the kinds, no Secrets', () => {
      expect(permissions(docs, 'sluice-gateway')).toEqual(
        sorted([
          ...gatewayKinds(NS),
          ...gatewayWorkers(WNS),
          ...gatewayKinds('team-a'),
          ...gatewayKinds('team-b'),
        ]),
      );
      expect(permissions(docs, 'sluice-operator')).toEqual(
        sorted([
          ...operatorReconcile(NS),
          ...operatorHome(NS, 'sluice-operator', true),
          ...operatorWorkers(WNS, true),
          ...operatorReconcile('team-a'),
          ...operatorReconcile('team-b'),
        ]),
      );
      expect(docs.some((d) => d.kind.startsWith('Cluster'))).toBe(false);
      const op = find(docs, 'Deployment', 'sluice-operator').spec.template.spec.containers[0];
      expect(env(op, 'SLUICE_WATCH_NAMESPACES').value).toBe('sluice,team-a,team-b');
      // The gateway's mirror follows the same namespaces.
      const gw = find(docs, 'Deployment', 'sluice-gateway').spec.template.spec.containers[0];
      expect(env(gw, 'SLUICE_WATCH_NAMESPACES').value).toBe('sluice,team-a,team-b');
    });

    it('validates with kubeconform -strict', async () => {
      expectAllValid(await kubeconform(dumpDocs(docs), [kubeSchemas]), docs.length);
    });
  });

  describe('with the workers in the release namespace (the shared layout of earlier releases)', () => {
    let docs: K8sObject[];
    beforeAll(async () => {
      docs = await render([DEFAULT_VALUES], [`workers.namespace=${NS}`]);
    });

    it('renders everything in the release namespace, with no Namespace and nothing to move', () => {
      expect(docs.some((d) => d.kind === 'Namespace')).toBe(false);
      for (const d of docs) if (d.metadata.namespace !== undefined) expect(d.metadata.namespace).toBe(NS);
      for (const name of ['sluice-gateway', 'sluice-operator']) {
        const [c] = find(docs, 'Deployment', name).spec.template.spec.containers;
        expect(env(c, 'SLUICE_WORKER_NAMESPACE').value).toBe(NS);
      }
      expect(permissions(docs, 'sluice-gateway')).toEqual(
        sorted([...gatewayKinds(NS), ...gatewayWorkers(NS)]),
      );
      expect(permissions(docs, 'sluice-operator')).toEqual(
        sorted([
          ...operatorReconcile(NS),
          ...operatorHome(NS, 'sluice-operator', false),
          ...operatorWorkers(NS, false),
        ]),
      );
    });

    it('validates with kubeconform -strict', async () => {
      expectAllValid(await kubeconform(dumpDocs(docs), [kubeSchemas]), docs.length);
    });
  });

  describe('with workers.createNamespace=false', () => {
    it('expects the worker namespace to exist and still binds the Roles there', async () => {
      const docs = await render([DEFAULT_VALUES], ['workers.createNamespace=false']);
      expect(docs.some((d) => d.kind === 'Namespace')).toBe(false);
      expect(find(docs, 'Role', 'sluice-gateway-workers', WNS)).toBeDefined();
      expect(find(docs, 'ServiceAccount', 'sluice-worker', WNS)).toBeDefined();
    });
  });

  describe('custom resources', () => {
    const crdDir = join(CHART, 'crds');
    const crdFiles = existsSync(crdDir)
      ? readdirSync(crdDir)
          .filter((f) => /\.ya?ml$/.test(f))
          .map((f) => join(crdDir, f))
      : [];
    const walk = (dir: string): string[] =>
      existsSync(dir)
        ? readdirSync(dir).flatMap((f) => {
            const p = join(dir, f);
            return statSync(p).isDirectory() ? walk(p) : /\.ya?ml$/.test(f) ? [p] : [];
          })
        : [];
    const examples = walk(join(ROOT, 'examples'));
    let crdSchemas = '';

    beforeAll(async () => {
      if (crdFiles.length === 0) return;
      crdSchemas = mkdtempSync(join(tmpdir(), 'sluice-crd-schemas-'));
      const r = await run(process.execPath, [
        join(ROOT, 'scripts/tools/openapi2jsonschema.mjs'),
        '--out',
        crdSchemas,
        '--crd',
        ...crdFiles,
      ]);
      if (r.code !== 0) throw new Error(`openapi2jsonschema failed:\n${r.stderr}`);
    });
    afterAll(() => {
      if (crdSchemas) rmSync(crdSchemas, { recursive: true, force: true });
    });

    it(`ships CRDs that are valid CustomResourceDefinitions (${crdFiles.length} files)`, async () => {
      // The lead's generator writes charts/sluice/crds (npm run gen:crds).
      expect(crdFiles.length).toBeGreaterThan(0);
      const docs = crdFiles.flatMap((f) => loadAll(readFileSync(f, 'utf8')) as K8sObject[]).filter(Boolean);
      expect(docs.map((d) => (d as Any).spec.names.kind).sort()).toEqual(
        ['Connector', 'DataModel', 'Pipeline', 'Subscription', 'Warehouse'].sort(),
      );
      expectAllValid(await kubeconform(dumpDocs(docs), [kubeSchemas]), docs.length);
    });

    it(`validates examples/ against the CRD schemas (${examples.length} files)`, async () => {
      if (examples.length === 0) return; // examples/ holds only its README so far
      // Sluice's kinds and Kubernetes' own: KEDA's ScaledObject (keda-scaledobject.yaml) has no schema here.
      const docs = examples.flatMap((f) =>
        (loadAll(readFileSync(f, 'utf8')) as (K8sObject | null)[])
          .filter((d): d is K8sObject => d !== null && !String(d.apiVersion).startsWith('keda.sh/'))
          .map((d) => ({ ...d, __file: relative(ROOT, f) })),
      );
      const yaml = dumpDocs(docs.map(({ __file: _f, ...d }) => d));
      const result = await kubeconform(yaml, [
        `${crdSchemas}/{{ .ResourceKind }}{{ .KindSuffix }}.json`,
        kubeSchemas,
      ]);
      expectAllValid(result, docs.length);
    });
  });
});

// ---------------------------------------------------------------------------
// What the Dockerfile says, checked without building it; the built image
// itself is checked by e2e/image.test.ts (docs/image.md).

describe('Dockerfile', () => {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const lines = dockerfile
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'));

  /** .dockerignore semantics: the last matching pattern wins; a match on a directory covers what is below. */
  const ignored = (() => {
    const patterns = readFileSync(join(ROOT, '.dockerignore'), 'utf8')
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'))
      .map((l) => {
        const negate = l.startsWith('!');
        const glob = (negate ? l.slice(1) : l).replace(/^\/+|\/+$/g, '');
        const re = glob
          .split('/')
          .map((seg) =>
            seg === '**'
              ? '.*'
              : seg
                  .replace(/[.+^${}()|[\]\\]/g, '\\$&')
                  .replace(/\*/g, '[^/]*')
                  .replace(/\?/g, '[^/]'),
          )
          .join('/')
          .replace(/\.\*\//g, '(?:.*/)?');
        return { negate, re: new RegExp(`^${re}(?:/.*)?$`) };
      });
    return (path: string) => {
      let out = false;
      for (const p of patterns) if (p.re.test(path)) out = !p.negate;
      return out;
    };
  })();

  it('is multi-stage on Node 24 and runs as uid 10001 with node as the entrypoint', () => {
    expect(lines).toContain('ARG NODE_IMAGE=node:24-bookworm-slim');
    const stages = lines.filter((l) => l.startsWith('FROM ')).map((l) => l.split(/\s+AS\s+/i)[1]);
    expect(stages).toEqual(['build', 'deps', 'runtime']);
    expect(lines).toContain('USER 10001:10001');
    expect(lines[lines.length - 2]).toBe('ENTRYPOINT ["node"]');
    expect(lines[lines.length - 1]).toBe('CMD ["gateway/dist/main.js"]');
    for (const l of lines.filter((x) => x.includes('--from='))) {
      expect(stages).toContain(/--from=(\S+)/.exec(l)?.[1]);
    }
  });

  it('COPYs only paths that exist and that .dockerignore lets through', () => {
    const sources = lines
      .filter((l) => l.startsWith('COPY ') && !l.includes('--from='))
      .flatMap((l) => l.split(/\s+/).slice(1, -1));
    expect(sources.length).toBeGreaterThan(5);
    for (const src of sources) {
      expect({ src, exists: existsSync(join(ROOT, src)), ignored: ignored(src) }).toEqual({
        src,
        exists: true,
        ignored: false,
      });
    }
    // Sources enter the context, tests and build output do not.
    expect(ignored('gateway/src/main.ts')).toBe(false);
    expect(ignored('gateway/src/config.test.ts')).toBe(true);
    expect(ignored('node_modules/x')).toBe(true);
    expect(ignored('gateway/dist/main.js')).toBe(true);
    expect(ignored('e2e/package.json')).toBe(false);
    expect(ignored('e2e/chart.test.ts')).toBe(true);
  });

  it("patches the workers' Kafka client after both installs (scripts/patch-kafka-client.mjs)", () => {
    const text = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
    expect(text.match(/&& node scripts\/patch-kafka-client\.mjs/g)).toHaveLength(2);
    expect(ignored('scripts/patch-kafka-client.mjs')).toBe(false);
    expect(ignored('scripts/with-kafka.sh')).toBe(true);
  });

  it('starts the entry points the chart runs', () => {
    // gateway/dist/main.js and dataplane/dist/main.js come from these sources;
    // operator/dist/main.js (the chart's operator.args) arrives with the operator.
    for (const src of ['gateway/src/main.ts', 'dataplane/src/main.ts']) {
      expect({ src, exists: existsSync(join(ROOT, src)) }).toEqual({ src, exists: true });
    }
    const values = load(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as Any;
    expect(values.gateway.args).toEqual(['gateway/dist/main.js']);
    expect(values.workers.args).toEqual(['dataplane/dist/main.js']);
    expect(values.podSecurityContext.runAsUser).toBe(10001);
    expect(values.securityContext.runAsUser).toBe(10001);
  });
});

// `helm uninstall` (charts/sluice/README.md, "Uninstalling"): a pre-delete
// hook Job, its own service account and Roles, bounded in time, turned off by
// a value. What the programs do is tested against a real API server and
// PostgreSQL (gateway/test/uninstall.kube.test.ts); here, what Helm gets.
describe('helm uninstall: the pre-delete clean-up hook', () => {
  const HOOK = 'sluice-uninstall';
  const hooks = (docs: K8sObject[]) => docs.filter((d) => d.metadata.annotations?.['helm.sh/hook']);
  let docs: K8sObject[];

  beforeAll(async () => {
    helmBin ||= await ensureTool('helm');
    kubeconformBin ||= await ensureTool('kubeconform');
    kubeSchemas ||= await ensureTool('kube-schemas');
    docs = await render();
  }, 20 * 60_000);

  it("renders a bounded pre-delete Job that runs the operator's program, then the gateway's", () => {
    const job = find(docs, 'Job', HOOK, NS);
    expect(job.metadata.annotations).toEqual({
      'helm.sh/hook': 'pre-delete',
      'helm.sh/hook-weight': '0',
      'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
      // helm uninstall prints what the clean-up did, or why it failed.
      'helm.sh/hook-output-log-policy': 'hook-succeeded,hook-failed',
    });
    expect(job.spec.backoffLimit).toBe(1);
    expect(job.spec.activeDeadlineSeconds).toBe(240);
    const pod = job.spec.template.spec;
    expect(pod.restartPolicy).toBe('Never');
    expect(pod.serviceAccountName).toBe(HOOK);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    const [stop] = pod.initContainers as Any[];
    const [cleanUp] = pod.containers as Any[];
    expect([stop.args, cleanUp.args]).toEqual([
      ['operator/dist/uninstall/main.js'],
      ['gateway/dist/uninstall/main.js'],
    ]);
    for (const src of ['operator/src/uninstall/main.ts', 'gateway/src/uninstall/main.ts']) {
      expect({ src, exists: existsSync(join(ROOT, src)) }).toEqual({ src, exists: true });
    }
    // It stops the control plane the chart runs, within half the Job's deadline.
    const deployments = docs.filter((d) => d.kind === 'Deployment').map((d) => d.metadata.name);
    expect(env(stop, 'SLUICE_UNINSTALL_STOP').value.split(',').sort()).toEqual(deployments.sort());
    expect(env(stop, 'SLUICE_UNINSTALL_STOP_TIMEOUT_S').value).toBe('120');
    for (const c of [stop, cleanUp]) {
      expect(env(c, 'SLUICE_WORKER_NAMESPACE').value).toBe(WNS);
      expect(env(c, 'SLUICE_WATCH_NAMESPACES').value).toBe(NS);
      expect(c.securityContext.readOnlyRootFilesystem).toBe(true);
      expect(c.resources.limits.memory).toBe('256Mi');
    }
    expect(env(cleanUp, 'SLUICE_UNINSTALL_RELEASE_CAPTURES').value).toBe('true');
    // The first step's report reaches the log Helm prints, through the pod's shared /tmp.
    expect(env(stop, 'SLUICE_UNINSTALL_REPORT').value).toBe(env(cleanUp, 'SLUICE_UNINSTALL_REPORT').value);
    expect([stop, cleanUp].map((c) => c.volumeMounts[0].mountPath)).toEqual(['/tmp', '/tmp']);
    // The connectors' secrets are resolved as the gateway does: its database and keys, by reference.
    expect(env(cleanUp, 'DATABASE_URL').valueFrom.secretKeyRef.name).toBe('sluice-database');
    expect(env(cleanUp, 'SLUICE_MASTER_KEY').valueFrom.secretKeyRef.name).toBe('sluice-keys');
  });

  it('creates its service account and Roles as hooks before the Job, and deletes them with it', () => {
    expect(kinds(hooks(docs))).toEqual({ Job: 1, Role: 2, RoleBinding: 2, ServiceAccount: 1 });
    for (const d of hooks(docs).filter((x) => x.kind !== 'Job')) {
      expect({ object: `${d.kind}/${d.metadata.name}`, annotations: d.metadata.annotations }).toEqual({
        object: `${d.kind}/${d.metadata.name}`,
        annotations: {
          'helm.sh/hook': 'pre-delete',
          'helm.sh/hook-weight': '-10',
          'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
        },
      });
    }
    // Nothing else of the release is a hook: Helm deletes the rest after the Job.
    expect(hooks(docs).every((d) => d.metadata.name.startsWith(HOOK))).toBe(true);
  });

  it('grants the hook what it does and nothing more, in every namespace layout', async () => {
    const own = [
      ...grants(NS, 'apps', ['deployments'], ['get', 'patch'], 'sluice-gateway'),
      ...grants(NS, 'apps', ['deployments'], ['get', 'patch'], 'sluice-operator'),
      ...grants(NS, '', ['pods'], ['list']),
      ...grants(WNS, 'apps', ['deployments'], ['list', 'delete']),
      ...grants(WNS, '', ['pods'], ['list']),
      ...grants(WNS, '', ['secrets'], ['get', 'list', 'delete']),
    ];
    const kindsIn = (scope: string) => grants(scope, 'sluice.dev', KINDS, ['get', 'list', 'update']);
    expect(permissions(docs, HOOK)).toEqual(sorted([...own, ...kindsIn(NS)]));
    const extra = await render([DEFAULT_VALUES], ['rbac.extraNamespaces={team-a}']);
    expect(permissions(extra, HOOK)).toEqual(sorted([...own, ...kindsIn(NS), ...kindsIn('team-a')]));
    const cluster = await render([DEFAULT_VALUES], ['rbac.clusterScope=true']);
    expect(permissions(cluster, HOOK)).toEqual(sorted([...own, ...kindsIn('*')]));
    expect(kinds(hooks(cluster))).toEqual({
      ClusterRole: 1,
      ClusterRoleBinding: 1,
      Job: 1,
      Role: 2,
      RoleBinding: 2,
      ServiceAccount: 1,
    });
    expectAllValid(await kubeconform(dumpDocs(hooks(cluster)), [kubeSchemas]), hooks(cluster).length);
  });

  it('keeps the slots with uninstall.releaseCaptures=false, and renders no hook with uninstall.cleanup=false', async () => {
    const keep = await render([DEFAULT_VALUES], ['uninstall.releaseCaptures=false']);
    const cleanUp = (find(keep, 'Job', HOOK, NS).spec.template.spec.containers as Any[])[0];
    expect(env(cleanUp, 'SLUICE_UNINSTALL_RELEASE_CAPTURES').value).toBe('false');
    expect(hooks(await render([DEFAULT_VALUES], ['uninstall.cleanup=false']))).toEqual([]);
  });

  it('renders valid manifests, and values.schema.json refuses bad uninstall values', async () => {
    expectAllValid(await kubeconform(dumpDocs(hooks(docs)), [kubeSchemas]), hooks(docs).length);
    for (const set of [
      'uninstall.activeDeadlineSeconds=10',
      'uninstall.cleanUp=true',
      'uninstall.releaseCaptures=yes',
    ]) {
      const r = await templateSetting([set]);
      expect({ set, code: r.code }).toEqual({ set, code: 1 });
      expect(r.stderr).toMatch(/values don't meet the specifications of the schema|uninstall/);
    }
  });
});
