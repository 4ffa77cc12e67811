import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  AppsV1Api,
  CoreV1Api,
  KubeConfig,
  loadAllYaml,
  RbacAuthorizationV1Api,
  type V1Deployment,
  type V1Role,
  type V1RoleBinding,
} from '@kubernetes/client-node';
import { Admin } from '@platformatic/kafka';
import { positionTopic } from '@sluice/dataplane';
import { DeploymentRuntime, defaultPodTemplate, silentLogger } from '@sluice/operator';
import { WORKER_FINALIZER, type ConnectorResource } from '@sluice/shared/catalog';
import { cdcNames } from '@sluice/shared/connectors';
import { workerId } from '@sluice/shared/ports';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { testKafkaBrokers } from '@sluice/testing/kafka';
import { createTopic, topicExists } from '@sluice/testing/kafka-helpers';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { startTestGateway, testGatewayEnv, type TestGateway } from './harness.js';

// `helm uninstall` (charts/sluice/README.md, "Uninstalling"): the chart's
// pre-delete hook runs the operator's program, then the gateway's, against
// the real API server and the real PostgreSQL, here as the built programs the
// Job runs. An install is made as the chart and the operator would leave it:
// PostgreSQL sources created through the API (their passwords in managed
// Secrets of the worker namespace), their replication slots on the source
// database, the operator's finalizer on them and on a connector applied with
// kubectl in a second watched namespace (beside another controller's
// finalizer, which stays), their worker Deployments, the
// control plane's two Deployments, a user's own Secret and a control-plane
// Secret beside the managed ones. After the hook: the control plane is at
// zero replicas, no worker Deployment and no managed Secret is left, the
// user's Secret and Deployment are untouched, the connectors are still there
// without Sluice's finalizer (a kubectl delete completes), and the slots are
// dropped — or kept with releaseCaptures off. The programs run as the hook's
// service account with exactly the Roles the chart renders for it (helm
// template, bound through impersonation), so a right the chart forgot fails
// here, not on a user's cluster.

const ROOT = resolve(import.meta.dirname, '../..');
const STOP = join(ROOT, 'operator/dist/uninstall/main.js');
const CLEAN_UP = join(ROOT, 'gateway/dist/uninstall/main.js');
const FOREIGN_FINALIZER = 'example.com/keep';
const brokers = testKafkaBrokers();
const WORKER_SELECTOR = 'app.kubernetes.io/managed-by=sluice-operator,sluice.dev/worker';

interface Install {
  ns: string;
  wns: string;
  /** A watched namespace besides the release's (rbac.extraNamespaces). */
  extra: string;
  /** The hook's identity: its service account, with the chart's Roles only. */
  kubeconfig: string;
  gw: TestGateway;
  t: TeamSetup;
  connectors: string[];
}

function run(cmd: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((done) => {
    execFile(cmd, args, { cwd: ROOT, timeout: 20 * 60_000, maxBuffer: 16 << 20 }, (err, stdout, stderr) =>
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

function node(script: string, env: Record<string, string>): Promise<{ code: number; out: string }> {
  return new Promise((done) => {
    execFile(
      process.execPath,
      [script],
      { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 120_000 },
      (err, stdout, stderr) =>
        done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

describeWithKube('helm uninstall: the pre-delete clean-up on a real API server and PostgreSQL', () => {
  const kc = new KubeConfig();
  const apps = () => kc.makeApiClient(AppsV1Api);
  const core = () => kc.makeApiClient(CoreV1Api);
  const installs: Install[] = [];
  let source: ScratchDatabase;
  let dataDir: string;
  let helm: string;

  beforeAll(async () => {
    if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
    kc.loadFromFile(testKubeConfig() as string);
    await installCrds(testKubeConfig() as string);
    source = await createScratchDatabase('uninstall');
    await source.client.query('create table public.orders (id int primary key)');
    dataDir = mkdtempSync(join(tmpdir(), 'sluice-uninstall-'));
    const tool = await run('bash', [join(ROOT, 'scripts/tools/ensure-tool.sh'), 'helm']);
    if (tool.code !== 0) throw new Error(`ensure-tool.sh helm failed:\n${tool.out}`);
    helm = tool.out.trim().split('\n').pop()!;
  }, 20 * 60_000);
  afterAll(async () => {
    for (const i of installs) await i.gw.close();
    await source?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const slots = async () =>
    (await source.client.query<{ slot_name: string }>('select slot_name from pg_replication_slots')).rows.map(
      (r) => r.slot_name,
    );

  /** An install with these PostgreSQL sources (by host), as the operator leaves it running. */
  async function install(tag: string, hosts: string[]): Promise<Install> {
    const ns = `un-${tag}-${randomUUID().slice(0, 6)}`;
    const wns = `${ns}-workers`;
    const extra = `${ns}-team`;
    for (const name of [ns, wns, extra]) await core().createNamespace({ body: { metadata: { name } } });
    const gw = await startTestGateway('postgres', {
      SLUICE_CLUSTER_ADAPTER: 'kubernetes',
      KUBECONFIG: testKubeConfig() as string,
      SLUICE_NAMESPACE: ns,
      SLUICE_WORKER_NAMESPACE: wns,
      SLUICE_WATCH_NAMESPACES: `${ns},${extra}`,
      SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128',
    });
    const t = await setupTeam(gw, `uninstall-${tag}`);
    const it: Install = {
      ns,
      wns,
      extra,
      gw,
      t,
      connectors: [],
      kubeconfig: await hookIdentity(ns, wns, extra),
    };
    installs.push(it);
    const runtime = new DeploymentRuntime({
      kubeConfig: kc,
      namespace: wns,
      homeNamespace: ns,
      podTemplate: defaultPodTemplate('sluice:test'),
      log: silentLogger,
    });
    try {
      for (const [n, host] of hosts.entries()) {
        const res = await gw.http
          .post('/api/connectors/')
          .set(t.owner.auth)
          .send({
            name: `orders-${n}`,
            connector_type: 'POSTGRES_SOURCE',
            team_id: t.teamId,
            // The test server trusts local connections: the password only lands in the managed Secret.
            json_configuration: {
              ...source.settings,
              host,
              password: 'in-the-managed-secret',
              whitelist: ['public.orders'],
            },
          });
        expect(res.status).toBe(201);
        const id = res.body.id as string;
        it.connectors.push(id);
        await source.client.query(`select pg_create_logical_replication_slot($1, 'pgoutput')`, [
          cdcNames(id).slot,
        ]);
        await gw.ctx.cluster.patch('Connector', ns, id, { metadata: { finalizers: [WORKER_FINALIZER] } });
        await runtime.ensure({ id: workerId(ns, id), namespace: ns, config: {}, configHash: 'h1' });
      }
    } finally {
      await runtime.close();
    }
    // Applied with kubectl in the other watched namespace; another controller's finalizer beside the operator's.
    await gw.ctx.cluster.create<ConnectorResource>({
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Connector',
      metadata: { name: randomUUID(), namespace: extra, finalizers: [WORKER_FINALIZER, FOREIGN_FINALIZER] },
      spec: {
        name: 'events',
        teamId: t.teamId,
        connectorType: 'KAFKA_SOURCE',
        configuration: { topic: 'events', bootstrap_servers: 'kafka-0.kafka:9092' },
        desiredState: 'stopped',
      },
    } as ConnectorResource);
    // The control plane the hook stops, and what is not Sluice's in the worker namespace.
    for (const name of ['sluice-gateway', 'sluice-operator'])
      await apps().createNamespacedDeployment({ namespace: ns, body: deployment(name, 2) });
    await apps().createNamespacedDeployment({ namespace: wns, body: deployment('users-own', 1) });
    await core().createNamespacedSecret({
      namespace: wns,
      body: {
        metadata: { name: 'orders-db', annotations: { 'sluice.dev/allowed-teams': t.teamId } },
        stringData: { password: 'x' },
      },
    });
    await core().createNamespacedSecret({
      namespace: wns,
      body: {
        metadata: { name: 'sluice-keys', labels: { 'sluice.dev/control-plane': 'true' } },
        stringData: { 'master-key': 'x' },
      },
    });
    expect(await managedSecrets(wns)).toHaveLength(hosts.length);
    return it;
  }

  /** The chart's Roles of the hook, bound in these namespaces; a kubeconfig acting as its service account. */
  async function hookIdentity(ns: string, wns: string, extra: string): Promise<string> {
    const rendered = await run(helm, [
      ...['template', 'sluice', join(ROOT, 'charts/sluice'), '--namespace', ns],
      ...['-f', join(ROOT, 'charts/sluice/ci/default-values.yaml'), '--set', `workers.namespace=${wns}`],
      ...['--set', `rbac.extraNamespaces={${extra}}`],
      ...['--show-only', 'templates/uninstall-hook.yaml'],
    ]);
    if (rendered.code !== 0) throw new Error(`helm template failed:\n${rendered.out}`);
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    const docs = loadAllYaml(rendered.out) as { kind: string; metadata: { namespace: string } }[];
    for (const d of docs) {
      const namespace = d.metadata.namespace;
      if (d.kind === 'Role') await rbac.createNamespacedRole({ namespace, body: d as V1Role });
      if (d.kind === 'RoleBinding')
        await rbac.createNamespacedRoleBinding({ namespace, body: d as V1RoleBinding });
    }
    const hook = new KubeConfig();
    hook.loadFromOptions({
      clusters: kc.clusters,
      users: [
        {
          ...kc.getCurrentUser()!,
          name: 'hook',
          impersonateUser: `system:serviceaccount:${ns}:sluice-uninstall`,
        },
      ],
      contexts: [{ name: 'hook', cluster: kc.getCurrentCluster()!.name, user: 'hook' }],
      currentContext: 'hook',
    });
    const path = join(dataDir, `kubeconfig-${ns}`);
    writeFileSync(path, hook.exportConfig(), { mode: 0o600 });
    // The authorizer learns of new bindings through a watch: wait until they count.
    const as = new KubeConfig();
    as.loadFromFile(path);
    for (let attempt = 0; ; attempt++) {
      try {
        await as.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: wns });
        return path;
      } catch (err) {
        if (attempt > 50) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /** The hook's two containers, in order, with the chart's environment. */
  async function uninstall(i: Install, releaseCaptures: boolean, env: Record<string, string> = {}) {
    const cluster = {
      KUBECONFIG: i.kubeconfig,
      SLUICE_CLUSTER_ADAPTER: 'kubernetes',
      SLUICE_NAMESPACE: i.ns,
      SLUICE_WORKER_NAMESPACE: i.wns,
      SLUICE_WATCH_NAMESPACES: `${i.ns},${i.extra}`,
    };
    const report = join(dataDir, `report-${i.ns}.txt`);
    const stop = await node(STOP, {
      ...cluster,
      SLUICE_UNINSTALL_REPORT: report,
      SLUICE_UNINSTALL_STOP: 'sluice-gateway,sluice-operator',
      SLUICE_UNINSTALL_STOP_TIMEOUT_S: '30',
    });
    expect(stop).toMatchObject({ code: 0 });
    const cleanUp = await node(CLEAN_UP, {
      ...testGatewayEnv(dataDir, i.gw.ctx.config.databaseUrl),
      ...cluster,
      SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128',
      SLUICE_UNINSTALL_RELEASE_CAPTURES: String(releaseCaptures),
      SLUICE_UNINSTALL_REPORT: report,
      LOG_LEVEL: 'warn',
      ...env,
    });
    return { stop: stop.out, cleanUp };
  }

  const managedSecrets = async (wns: string) =>
    (await core().listNamespacedSecret({ namespace: wns })).items
      .map((s) => s.metadata?.name ?? '')
      .filter((n) => n.startsWith('sluice-connector-'));
  const secretNames = async (wns: string) =>
    (await core().listNamespacedSecret({ namespace: wns })).items.map((s) => s.metadata?.name ?? '').sort();
  const deploymentNames = async (namespace: string, labelSelector?: string) =>
    (await apps().listNamespacedDeployment({ namespace, labelSelector })).items.map((d) => d.metadata?.name);
  const connector = (i: Install, id: string) =>
    i.gw.ctx.cluster.get<ConnectorResource>('Connector', i.ns, id);

  it('stops everything, drops the slots, keeps the definitions; a second run finds nothing to do', async () => {
    const i = await install('release', [source.settings.host, source.settings.host]);
    const { stop, cleanUp } = await uninstall(i, true);
    expect(stop).toContain('control plane stopped: 2 Deployment(s) at 0 replicas');
    expect(stop).toContain(`worker Deployments deleted in ${i.wns}: 2`);
    expect(cleanUp.code).toBe(0);
    // What Helm prints (the last container's log) holds the first step's report too.
    expect(cleanUp.out).toContain('control plane stopped: 2 Deployment(s) at 0 replicas');
    expect(cleanUp.out).toContain('replication slots dropped: 2');
    expect(cleanUp.out).toContain(`managed Secrets deleted in ${i.wns}: 2`);
    expect(cleanUp.out).toContain('Sluice finalizers removed from 3 object(s)');
    expect(cleanUp.out).not.toContain('in-the-managed-secret');

    for (const name of ['sluice-gateway', 'sluice-operator']) {
      expect((await apps().readNamespacedDeployment({ name, namespace: i.ns })).spec?.replicas).toBe(0);
    }
    expect(await deploymentNames(i.wns, WORKER_SELECTOR)).toEqual([]);
    expect(await deploymentNames(i.wns)).toEqual(['users-own']);
    expect(await secretNames(i.wns)).toEqual(['orders-db', 'sluice-keys']);
    const left = await slots();
    for (const id of i.connectors) expect(left).not.toContain(cdcNames(id).slot);
    // The definitions stay, without the finalizer no operator would remove any more.
    for (const id of i.connectors) {
      expect((await connector(i, id))?.metadata.finalizers ?? []).not.toContain(WORKER_FINALIZER);
    }
    // In the other watched namespace too; another controller's finalizer is not Sluice's to remove.
    const applied = (await i.gw.ctx.cluster.list<ConnectorResource>('Connector', i.extra)).items;
    expect(applied.map((c) => c.metadata.finalizers)).toEqual([[FOREIGN_FINALIZER]]);
    // kubectl delete completes without an operator.
    await i.gw.ctx.cluster.delete('Connector', i.ns, i.connectors[0] as string);
    expect(await connector(i, i.connectors[0] as string)).toBeUndefined();

    const again = await uninstall(i, true);
    expect(again.stop).toContain(`worker Deployments deleted in ${i.wns}: 0`);
    expect(again.cleanUp.code).toBe(0);
    expect(again.cleanUp.out).toContain('replication slots dropped: 0; released by an earlier run: 1');
    expect(again.cleanUp.out).toContain(`managed Secrets deleted in ${i.wns}: 0`);
    expect(again.cleanUp.out).toContain('Sluice finalizers removed from 0 object(s)');
    expect(await connector(i, i.connectors[1] as string)).toBeDefined();
  }, 180_000);

  it('with releaseCaptures off, the slots stay on the source database', async () => {
    const i = await install('keep', [source.settings.host]);
    const { cleanUp } = await uninstall(i, false);
    expect(cleanUp.code).toBe(0);
    expect(cleanUp.out).toContain('replication slots kept (uninstall.releaseCaptures=false): 1');
    expect(await slots()).toContain(cdcNames(i.connectors[0] as string).slot);
    expect(await deploymentNames(i.wns, WORKER_SELECTOR)).toEqual([]);
    expect(await managedSecrets(i.wns)).toEqual([]);
    expect((await connector(i, i.connectors[0] as string))?.metadata.finalizers ?? []).toEqual([]);
    await source.client.query('select pg_drop_replication_slot($1)', [
      cdcNames(i.connectors[0] as string).slot,
    ]);
  }, 180_000);

  (brokers ? it : it.skip)(
    "a MariaDB source's position topic is deleted from the platform broker; kept with releaseCaptures off",
    async () => {
      const i = await install('topics', []);
      const mariadb = async () => {
        const id = randomUUID();
        await i.gw.ctx.cluster.create<ConnectorResource>({
          apiVersion: 'sluice.dev/v1alpha1',
          kind: 'Connector',
          metadata: { name: id, namespace: i.ns, finalizers: [WORKER_FINALIZER] },
          spec: {
            name: `crm-${id.slice(0, 6)}`,
            teamId: i.t.teamId,
            connectorType: 'MARIADB_SOURCE',
            configuration: { host: '127.0.0.1', port: 3306, user: 'cdc', whitelist: ['crm.customers'] },
            desiredState: 'stopped',
          },
        } as ConnectorResource);
        await createTopic(brokers!, positionTopic(id), 1);
        return id;
      };
      const exists = async (topic: string) => {
        const admin = new Admin({ clientId: 'uninstall-test', bootstrapBrokers: brokers! });
        try {
          return await topicExists(admin, topic);
        } finally {
          await admin.close();
        }
      };
      const stream = { SLUICE_STREAM_BROKERS: brokers!.join(',') };
      const kept = await mariadb();
      const off = await uninstall(i, false, stream);
      expect(off.cleanUp.code).toBe(0);
      expect(off.cleanUp.out).toContain(
        `position topics kept (uninstall.releaseCaptures=false): 1 (${positionTopic(kept)})`,
      );
      expect(await exists(positionTopic(kept))).toBe(true);
      const { cleanUp } = await uninstall(i, true, stream);
      expect(cleanUp.code).toBe(0);
      expect(cleanUp.out).toContain(`position topics deleted: 1 (${positionTopic(kept)})`);
      expect(await exists(positionTopic(kept))).toBe(false);
      expect((await connector(i, kept))?.metadata.finalizers ?? []).toEqual([]);
    },
    180_000,
  );

  it('a source it cannot reach: everything else done, the slot named, its Secret kept for a new run, exit 1', async () => {
    const i = await install('unreachable', ['169.254.169.254']);
    const { cleanUp } = await uninstall(i, true);
    const [id] = i.connectors as [string];
    expect(cleanUp.code).toBe(1);
    expect(cleanUp.out).toContain(
      `the replication slot ${cdcNames(id).slot} of connector ${i.ns}/${id} was not dropped`,
    );
    expect(cleanUp.out).toContain(`SELECT pg_drop_replication_slot('${cdcNames(id).slot}')`);
    expect(await managedSecrets(i.wns)).toEqual([`sluice-connector-${id}`]);
    expect((await connector(i, id))?.metadata.finalizers ?? []).toEqual([]);
    expect(await deploymentNames(i.wns, WORKER_SELECTOR)).toEqual([]);
    await source.client.query('select pg_drop_replication_slot($1)', [cdcNames(id).slot]);
  }, 180_000);
});

function deployment(name: string, replicas: number): V1Deployment {
  const labels = { app: name };
  return {
    metadata: { name, labels },
    spec: {
      replicas,
      selector: { matchLabels: labels },
      template: { metadata: { labels }, spec: { containers: [{ name: 'main', image: 'sluice:test' }] } },
    },
  };
}
