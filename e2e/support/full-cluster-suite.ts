import { afterAll, beforeAll, expect, it } from '@jest/globals';
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  setHeaderOptions,
  type V1Service,
} from '@kubernetes/client-node';
import { countingListener, type CountingListener } from '@sluice/testing/counting-listener';
import { createScratchDatabase, type ScratchDatabase } from '@sluice/testing/postgres';
import { createTopic, newProducer } from '@sluice/testing/kafka-helpers';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CHART,
  MINUTE,
  componentSelector,
  diagnostics,
  ensureHelm,
  readyDeployment,
  restClient,
  run,
  sleep,
  until,
  type Any,
} from './cluster.js';

// The full-cluster suite, one for every cluster it runs on: the test node of
// scripts/with-node.sh (e2e/node.e2e.test.ts, in every `make test`) and k3s in
// a container where a Docker engine runs (e2e/k3s.e2e.test.ts). The image
// built from the repository is in the cluster's containerd (never pulled),
// `helm install` puts charts/sluice onto running pods, and the host's
// PostgreSQL server and Kafka broker serve the pods at the address where pods
// reach the host. A platform team's day, in order: install, the API through
// the chart's Service, the README's pipeline to `live` with its rows in the
// target table, pause and resume, pods deleted under load, scale-out, the same
// pipeline as manifests (the GitOps path), the operator's leader killed, the
// API server cut off, an upgrade to a newer commit's image, uninstall leaving
// nothing behind. e2e/README.md describes each step.

const NS = 'sluice';
const WORKERS = `${NS}-workers`;
const RELEASE = 'sluice';

/** A cluster the suite runs on: started before the first test, stopped after the last. */
export interface ClusterUnderTest {
  /** A short name, used in topic names and messages. */
  name: string;
  start(): Promise<StartedCluster>;
  stop(): Promise<void>;
}

export interface StartedCluster {
  kubeconfig: string;
  /** A kubectl of the cluster's release, run on the host. */
  kubectl: string;
  /** The Sluice image in the cluster's containerd, and the next release's (a newer commit's) with the version it reports. */
  image: string;
  nextImage: string;
  nextVersion: string;
  /** Where pods reach the host: relays to the host's servers listen there. */
  hostIp: string;
  /** The Kafka broker as pods reach it, and as the test (on the host) reaches it. */
  podBrokers: string;
  hostBrokers: string;
  /** The gateway's base URL as the test reaches it, given the chart's gateway Service. */
  gatewayUrl(service: V1Service, core: CoreV1Api): Promise<string>;
  /** Cuts the API server off (the cluster's workloads keep running), and lets it go on. */
  freezeApiServer(): Promise<void>;
  thawApiServer(): Promise<void>;
}

export function fullClusterSuite(cluster: ClusterUnderTest): void {
  const kc = new KubeConfig();
  const TOPIC = `${cluster.name}-orders-${Date.now()}`;
  let c: StartedCluster;
  const TABLE = 'orders';
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let work: string;
  let helm: string;
  let control: ScratchDatabase; // the control plane's database
  let warehouse: ScratchDatabase; // the pipelines' target database
  let pgRelay: CountingListener; // the host's PostgreSQL where pods reach the host
  let gatewayUrl = '';
  const api = restClient(() => gatewayUrl);
  const explain = () => diagnostics(kc, [NS, WORKERS]);
  const wait = <T>(what: string, probe: () => Promise<T | undefined>, ms: number) =>
    until(what, probe, ms, explain);
  const imageRepository = () => c.image.slice(0, c.image.lastIndexOf(':'));
  const valuesFile = () => join(work, 'values.json');
  /** Orders `from` .. `to - 1` on the source topic, from the host (its 127.0.0.1 listener), `pauseMs` between batches of 500. */
  const produceOrders = async (from: number, to: number, pauseMs = 0) => {
    const producer = newProducer([c.hostBrokers]);
    try {
      for (let i = from; i < to; i += 500) {
        if (pauseMs && i > from) await sleep(pauseMs);
        const messages = [];
        for (let n = i; n < Math.min(to, i + 500); n++)
          messages.push({ topic: TOPIC, key: String(n), value: JSON.stringify({ id: n, amount: n * 10 }) });
        await producer.send({ messages });
      }
    } finally {
      await producer.close();
    }
  };
  /** How many orders the target table holds, and how many of `0 .. n - 1` are missing. */
  const ordersIn = async (table: string, n: number) => {
    const r = await warehouse.client
      .query(
        `select count(*)::int as rows, ($1::int - count(distinct order_id))::int as missing from ${table} where order_id < $1`,
        [n],
      )
      .catch(() => undefined);
    return r?.rows[0] as { rows: number; missing: number } | undefined;
  };
  /** How many orders of `from .. to - 1` the target table lacks. */
  const missingBetween = async (from: number, to: number) => {
    const r = await warehouse.client.query(
      `select ($2::int - $1::int - count(distinct order_id))::int as missing from ${TABLE} where order_id >= $1 and order_id < $2`,
      [from, to],
    );
    return r.rows[0].missing as number;
  };
  /** Waits until `table` holds every order of `0 .. n - 1`. */
  const allOrders = (table: string, n: number, ms = 5 * MINUTE) =>
    wait(
      `orders 0..${n - 1} in ${table}`,
      async () => ((await ordersIn(table, n))?.missing === 0 ? true : undefined),
      ms,
    );
  /** The pipeline's state as the REST API says it. */
  const pipelineState = async (id: string) => (await api('GET', `/api/pipelines/${id}`, { token })).body;
  const waitState = (id: string, state: string, ms = 5 * MINUTE) =>
    wait(
      `pipeline ${id} to be ${state}`,
      async () => {
        const p = await pipelineState(id);
        if (p?.state === 'error' && state !== 'error')
          throw new Error(`pipeline in error: ${p.status_message}`);
        return p?.state === state ? p : undefined;
      },
      ms,
    );
  /** The worker Deployments in the workers' namespace, by name. */
  const workerDeployments = async () =>
    (await kc.makeApiClient(AppsV1Api).listNamespacedDeployment({ namespace: WORKERS })).items.map(
      (d) => d.metadata!.name!,
    );
  const kubectl = (...args: string[]) =>
    run(c.kubectl, [...args, '--namespace', NS, '--kubeconfig', c.kubeconfig]);
  const helmRun = (...args: string[]) =>
    run(helm, [...args, '--namespace', NS, '--kubeconfig', c.kubeconfig], 10 * MINUTE);

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'sluice-node-e2e-'));
    helm = await ensureHelm();
    c = await cluster.start();
    kc.loadFromFile(c.kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);

    control = await createScratchDatabase('node_control');
    warehouse = await createScratchDatabase('node_dwh');
    pgRelay = await countingListener(c.hostIp, { host: control.settings.host, port: control.settings.port });
    const { user, password, database } = control.settings;
    const databaseUrl = `postgres://${encodeURIComponent(user)}${password ? `:${encodeURIComponent(password)}` : ''}@${c.hostIp}:${pgRelay.port}/${database}`;
    // The node's bridge is a private address, which the gateway's outbound
    // policy refuses by default: the platform team allows exactly it.
    const allowHost = [{ name: 'SLUICE_OUTBOUND_ALLOW_CIDRS', value: `${c.hostIp}/32` }];
    writeFileSync(
      valuesFile(),
      JSON.stringify({
        // Never pull: the image is only in the cluster's containerd.
        image: { repository: imageRepository(), tag: c.image.split(':').pop(), pullPolicy: 'Never' },
        postgresql: { url: databaseUrl },
        gateway: { extraEnv: allowHost },
        operator: { extraEnv: allowHost },
      }),
    );
    const install = await helmRun('install', RELEASE, CHART, '--create-namespace', '--values', valuesFile());
    if (install.code !== 0) throw new Error(`helm install failed:\n${install.out}`);
    const [service] = (
      await core.listNamespacedService({
        namespace: NS,
        labelSelector: componentSelector(RELEASE, 'gateway'),
      })
    ).items;
    if (!service) throw new Error(`helm install made no gateway Service\n${install.out}`);
    gatewayUrl = await c.gatewayUrl(service, core);
  }, 30 * MINUTE);

  afterAll(async () => {
    await pgRelay?.close();
    await warehouse?.drop();
    await control?.drop().catch(() => undefined);
    if (work) rmSync(work, { recursive: true, force: true });
    await cluster.stop();
  }, 5 * MINUTE);

  it(
    'helm install: two gateway and two operator replicas Ready on the node, one operator holds the Lease, the API answers through the Service',
    async () => {
      const gateway = await wait(
        'the gateway Deployment to be Ready',
        () => readyDeployment(kc, NS, RELEASE, 'gateway'),
        10 * MINUTE,
      );
      const operator = await wait(
        'the operator Deployment to be Ready',
        () => readyDeployment(kc, NS, RELEASE, 'operator'),
        10 * MINUTE,
      );
      expect([gateway.status?.readyReplicas, operator.status?.readyReplicas]).toEqual([2, 2]);
      const pods = (
        await core.listNamespacedPod({ namespace: NS, labelSelector: componentSelector(RELEASE, 'operator') })
      ).items;
      const nodes = (await core.listNode()).items.map((n) => n.metadata!.name);
      for (const pod of pods) expect(nodes).toContain(pod.spec?.nodeName);
      const names = pods.map((p) => p.metadata!.name!);
      const leases = kc.makeApiClient(CoordinationV1Api);
      const holder = await wait(
        'an operator replica to hold the Lease',
        async () => {
          const lease = await leases.readNamespacedLease({ name: operator.metadata!.name!, namespace: NS });
          const id = lease.spec?.holderIdentity;
          return id && names.includes(id) ? id : undefined;
        },
        3 * MINUTE,
      );
      expect(names).toContain(holder);
      const ready = await wait(
        'GET /api/readyz through the gateway Service',
        async () => {
          const r = await api('GET', '/api/readyz');
          return r.status === 200 ? r : undefined;
        },
        3 * MINUTE,
      );
      expect(ready.status).toBe(200);
      // The workers' namespace the chart made, apart from the control plane's.
      expect((await core.readNamespace({ name: WORKERS })).metadata?.name).toBe(WORKERS);
    },
    25 * MINUTE,
  );

  // Filled by the tests below, in order.
  let token = '';
  let teamId = '';
  let pipelineId = '';
  let targetPassword = '';

  it('a user signs up and logs in through the Service', async () => {
    const email = 'ana@example.com';
    const password = 'ana-password-1';
    const signup = await api('POST', '/api/auth/register', { json: { email, password } });
    expect([signup.status, signup.body?.email]).toEqual([201, email]);
    const login = await api('POST', '/api/auth/jwt/login', { form: { username: email, password } });
    expect(login.status).toBe(200);
    token = login.body.access_token as string;
    const env = await api('POST', '/api/envs/', { token, json: { name: 'dev', description: 'Development' } });
    expect(env.status).toBe(201);
    const team = await api('POST', '/api/teams/', { token, json: { name: 'data-platform' } });
    expect(team.status).toBe(201);
    teamId = team.body.id as string;
  });

  it(
    "the README's pipeline, created through the REST API and started, goes live on worker pods and its rows land in the table",
    async () => {
      const { user, password, database } = warehouse.settings;
      const created = await api('POST', '/api/pipelines/', {
        token,
        json: {
          name: 'orders-to-dwh',
          team_id: teamId,
          source_name: 'orders-topic',
          source_type: 'KAFKA_SOURCE',
          source_config: { topic: TOPIC, bootstrap_servers: c.podBrokers },
          target_name: 'dwh',
          target_type: 'POSTGRES_TARGET',
          target_config: {
            host: c.hostIp,
            port: pgRelay.port,
            database,
            user,
            // The test server trusts 127.0.0.1 (the relay's side) and may ask for none.
            password: (targetPassword = password || 'not-asked-by-the-test-server'),
            ssl_mode: 'disable',
          },
          subscription_target_table_name: TABLE,
          subscription_mapper_config: [
            { key: 'order_id', path: 'id', cast: 'int', primary_key: true },
            { key: 'amount', path: 'amount', cast: 'int' },
          ],
        },
      });
      expect([created.status, created.body]).toEqual([
        201,
        expect.objectContaining({ id: expect.any(String) }),
      ]);
      pipelineId = created.body.id as string;
      // The source topic exists before the pipeline starts, as in production.
      // Six partitions: room for the target to scale out into.
      await createTopic([c.hostBrokers], TOPIC, 6);
      const start = await api('POST', `/api/pipelines/${pipelineId}/start`, { token });
      expect([start.status, start.body]).toEqual([202, 'BUILDING']);
      const live = await wait(
        'the pipeline to be live',
        async () => {
          const r = await api('GET', `/api/pipelines/${pipelineId}`, { token });
          if (r.body?.state === 'error') throw new Error(`pipeline in error: ${r.body.status_message}`);
          return r.body?.state === 'live' ? r.body : undefined;
        },
        10 * MINUTE,
      );
      expect(live.state).toBe('live');
      // Its workers are pods Running on the node, in the workers' namespace.
      const workerPods = (await core.listNamespacedPod({ namespace: WORKERS })).items.filter(
        (p) => p.status?.phase === 'Running',
      );
      expect(workerPods.length).toBeGreaterThanOrEqual(1);

      await produceOrders(0, 1000);
      const rows = await wait(
        'the 1,000 rows in the target table',
        async () => {
          const r = await warehouse.client
            .query(`select count(*)::int as n, sum(amount)::bigint as s from ${TABLE}`)
            .catch(() => undefined);
          return r?.rows[0]?.n === 1000 ? r.rows[0] : undefined;
        },
        5 * MINUTE,
      );
      expect(Number(rows.s)).toBe((999 * 1000 * 10) / 2);

      // `kubectl get pipelines -n sluice`: the CRD's printer columns.
      const table: Any = await custom.listNamespacedCustomObject(
        { group: 'sluice.dev', version: 'v1alpha1', namespace: NS, plural: 'pipelines' },
        setHeaderOptions('Accept', 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json'),
      );
      const columns = (table.columnDefinitions as { name: string }[]).map((c) => c.name);
      const row = (table.rows as { cells: unknown[]; object: Any }[]).find(
        (r) => r.object.metadata.name === pipelineId,
      );
      expect(row?.cells[columns.indexOf('State')]).toBe('live');
      expect(row?.cells[columns.indexOf('Ready')]).toBe('True');
    },
    20 * MINUTE,
  );

  it("the pipeline and its parts are custom resources; the target's password is in a Secret of the workers' namespace, not in them", async () => {
    const list = (plural: string): Promise<Any> =>
      custom.listNamespacedCustomObject({ group: 'sluice.dev', version: 'v1alpha1', namespace: NS, plural });
    expect(((await list('pipelines')).items as Any[]).map((p) => p.metadata.name)).toContain(pipelineId);
    const everything = [];
    for (const plural of ['connectors', 'datamodels', 'subscriptions', 'pipelines'])
      everything.push(...(await list(plural)).items);
    // Two connectors, a data model, a subscription, the pipeline.
    expect(everything.length).toBeGreaterThanOrEqual(5);
    expect(JSON.stringify(everything)).not.toContain(targetPassword);
    const holders = async (namespace: string) =>
      (await core.listNamespacedSecret({ namespace })).items.filter((s) =>
        Object.values(s.data ?? {}).some((v) => Buffer.from(v, 'base64').toString() === targetPassword),
      );
    expect((await holders(WORKERS)).length).toBeGreaterThanOrEqual(1);
    expect(await holders(NS)).toHaveLength(0);
    expect((await api('GET', `/api/pipelines/${pipelineId}`, { token })).body.target_config.password).toBe(
      '<redacted>',
    );
  });

  it(
    'pause: the worker Deployments go away and nothing is delivered; resume: what arrived meanwhile is delivered',
    async () => {
      const { source_connector_id: source, target_connector_id: target } = await pipelineState(pipelineId);
      const workers = [`sluice-worker-${source}`, `sluice-worker-${target}`];
      expect(await workerDeployments()).toEqual(expect.arrayContaining(workers));
      expect((await api('POST', `/api/pipelines/${pipelineId}/pause`, { token })).status).toBe(202);
      await waitState(pipelineId, 'paused');
      // `paused` is the API's answer at once; the workers stop when their pods are gone.
      await wait(
        "the pipeline's worker Deployments and pods to be gone",
        async () => {
          if ((await workerDeployments()).some((d) => workers.includes(d))) return undefined;
          const pods = (await core.listNamespacedPod({ namespace: WORKERS })).items;
          return pods.some((p) => workers.some((w) => p.metadata!.name!.startsWith(`${w}-`)))
            ? undefined
            : true;
        },
        3 * MINUTE,
      );
      await produceOrders(1000, 1500);
      await sleep(3000);
      expect((await ordersIn(TABLE, 1500))?.rows).toBe(1000);
      expect((await api('POST', `/api/pipelines/${pipelineId}/start`, { token })).status).toBe(202);
      await waitState(pipelineId, 'live');
      await allOrders(TABLE, 1500);
    },
    15 * MINUTE,
  );

  it(
    'a worker pod deleted mid-stream: recreated, and no numbered order is missing from the table',
    async () => {
      const { target_connector_id: target } = await pipelineState(pipelineId);
      // About 20 s of orders, so that the worker goes in the middle of them.
      const producing = produceOrders(1500, 21_500, 500);
      // While the orders stream in, the target worker's pod goes (as on a node drain).
      await wait(
        'the first streamed orders to land',
        async () => ((await ordersIn(TABLE, 21_500))!.rows > 2000 ? true : undefined),
        3 * MINUTE,
      );
      const [pod] = (
        await core.listNamespacedPod({
          namespace: WORKERS,
          labelSelector: `sluice.dev/worker=sluice-worker-${target}`,
        })
      ).items;
      expect(pod).toBeDefined();
      // At once, as when its node dies: no graceful stop, no last commit.
      await core.deleteNamespacedPod({
        name: pod!.metadata!.name!,
        namespace: WORKERS,
        gracePeriodSeconds: 0,
      });
      const landedBefore = (await ordersIn(TABLE, 21_500))!.rows;
      await producing;
      expect(landedBefore).toBeLessThan(21_500);
      await allOrders(TABLE, 21_500, 8 * MINUTE);
      const pods = (
        await core.listNamespacedPod({
          namespace: WORKERS,
          labelSelector: `sluice.dev/worker=sluice-worker-${target}`,
        })
      ).items;
      expect(pods.map((p) => p.metadata!.name)).not.toContain(pod!.metadata!.name);
      expect(pods.filter((p) => p.status?.phase === 'Running')).toHaveLength(1);
      expect((await pipelineState(pipelineId)).state).toBe('live');
    },
    15 * MINUTE,
  );

  it(
    'kubectl scale of the target to 3 while numbered orders flow: three pods share the partitions, one killed, back to 1, nothing lost; a source refuses',
    async () => {
      const { source_connector_id: source, target_connector_id: target } = await pipelineState(pipelineId);
      const selector = `sluice.dev/connector-id=${target}`;
      const running = async () =>
        (await core.listNamespacedPod({ namespace: WORKERS, labelSelector: selector })).items.filter(
          (p) =>
            p.status?.phase === 'Running' &&
            !p.metadata?.deletionTimestamp &&
            p.status.containerStatuses?.[0]?.ready,
        );
      const [first] = await running();
      expect(first).toBeDefined();
      const producing = produceOrders(100_000, 120_000, 500);
      const scaled = await kubectl('scale', `connector/${target}`, '--replicas=3');
      expect([scaled.code, scaled.out]).toEqual([0, expect.stringContaining('scaled')]);
      const three = await wait(
        'three Ready target pods',
        async () => ((await running()).length === 3 ? running() : undefined),
        5 * MINUTE,
      );
      // The pod that ran before the scale was not restarted for it.
      const kept = three.find((p) => p.metadata!.uid === first!.metadata!.uid);
      expect(kept?.status?.containerStatuses?.[0]?.restartCount).toBe(0);
      const deployment = await kc
        .makeApiClient(AppsV1Api)
        .readNamespacedDeployment({ name: `sluice-worker-${target}`, namespace: WORKERS });
      expect([deployment.spec?.replicas, deployment.spec?.strategy?.type]).toEqual([3, 'RollingUpdate']);
      const connector: Any = await custom.getNamespacedCustomObject({
        group: 'sluice.dev',
        version: 'v1alpha1',
        namespace: NS,
        plural: 'connectors',
        name: target,
      });
      await wait(
        'the connector to report three ready replicas',
        async () =>
          (await api('GET', `/api/connectors/${target}`, { token })).body?.ready_replicas === 3
            ? true
            : undefined,
        3 * MINUTE,
      );
      expect(connector.spec.replicas).toBe(3);
      // The connector's log is the three pods' logs, each line naming the pod that wrote it.
      const writers = await wait(
        "lines of all three pods in the connector's log",
        async () => {
          const r = await api('GET', `/api/connectors/${target}/logs?tail=2000`, { token });
          const instanceOf = (line: string) => /"instance":"([^"]+)"/.exec(line)?.[1];
          const pods = new Set((r.body?.lines as string[] | undefined)?.map(instanceOf).filter(Boolean));
          return pods.size === 3 ? [...pods].sort() : undefined;
        },
        3 * MINUTE,
      );
      expect(writers).toEqual(three.map((p) => p.metadata!.name!).sort());
      // One of the three goes at once, mid-stream.
      await core.deleteNamespacedPod({
        name: three[1]!.metadata!.name!,
        namespace: WORKERS,
        gracePeriodSeconds: 0,
      });
      await producing;
      await wait(
        'every order of 100,000..119,999 in the table',
        async () => ((await missingBetween(100_000, 120_000)) === 0 ? true : undefined),
        8 * MINUTE,
      );
      // Back to one: nothing lost either.
      expect((await kubectl('scale', `connector/${target}`, '--replicas=1')).code).toBe(0);
      await wait(
        'one target pod',
        async () => ((await running()).length === 1 ? true : undefined),
        5 * MINUTE,
      );
      await produceOrders(120_000, 121_000);
      await wait(
        'every order of 120,000..120,999 in the table',
        async () => ((await missingBetween(120_000, 121_000)) === 0 ? true : undefined),
        5 * MINUTE,
      );
      // A source has one reader by construction.
      const refused = await kubectl('scale', `connector/${source}`, '--replicas=2');
      expect(refused.code).not.toBe(0);
      expect(refused.out).toContain('only target connectors take a replica count other than 1');
    },
    20 * MINUTE,
  );

  it(
    'the same pipeline applied as manifests (the GitOps path) goes live, and the REST API shows it',
    async () => {
      const ids = Array.from({ length: 5 }, () => randomUUID());
      const [sourceId, targetId, modelId, subscriptionId, gitopsPipelineId] = ids as [
        string,
        string,
        string,
        string,
        string,
      ];
      const topic = `${TOPIC}-gitops`;
      await createTopic([c.hostBrokers], topic, 1);
      const { user, password, database } = warehouse.settings;
      const labels = { 'sluice.dev/team-id': teamId };
      // The target's password in a Secret of the workers' namespace, granted to the team.
      await core.createNamespacedSecret({
        namespace: WORKERS,
        body: {
          metadata: { name: 'dwh-password', annotations: { 'sluice.dev/allowed-teams': teamId } },
          stringData: { password: password || 'not-asked-by-the-test-server' },
        },
      });
      const object = (kind: string, name: string, spec: Any, extraLabels: Record<string, string> = {}) => ({
        apiVersion: 'sluice.dev/v1alpha1',
        kind,
        metadata: { name, namespace: NS, labels: { ...labels, ...extraLabels } },
        spec: { teamId, ...spec },
      });
      const manifests = [
        object('Connector', sourceId, {
          name: 'orders-in-gitops',
          connectorType: 'KAFKA_SOURCE',
          configuration: { topic, bootstrap_servers: c.podBrokers },
          desiredState: 'stopped',
        }),
        object('Connector', targetId, {
          name: 'dwh-gitops',
          connectorType: 'POSTGRES_TARGET',
          configuration: {
            host: c.hostIp,
            port: pgRelay.port,
            database,
            user,
            ssl_mode: 'disable',
            password: { valueFrom: { secretKeyRef: { name: 'dwh-password', key: 'password' } } },
          },
          desiredState: 'stopped',
        }),
        object(
          'DataModel',
          modelId,
          {
            name: 'orders-in-gitops',
            connectorId: sourceId,
            entry: topic,
            enabled: true,
            sourceTopic: topic,
            errorTable: { enabled: false },
          },
          { 'sluice.dev/connector-id': sourceId },
        ),
        object(
          'Subscription',
          subscriptionId,
          {
            name: 'orders-gitops',
            datamodelId: modelId,
            targetConnectorId: targetId,
            targetTableName: 'orders_gitops',
            mapperConfig: [
              { key: 'order_id', path: 'id', cast: 'int', primary_key: true },
              { key: 'amount', path: 'amount', cast: 'int' },
            ],
            consumerId: 'sluice-orders-gitops',
            backfill: false,
            enabled: false,
            errorTable: { enabled: false },
          },
          { 'sluice.dev/datamodel-id': modelId, 'sluice.dev/target-connector-id': targetId },
        ),
        object('Pipeline', gitopsPipelineId, {
          name: 'orders-gitops',
          sourceConnectorId: sourceId,
          targetConnectorId: targetId,
          datamodelId: modelId,
          subscriptionId,
          ownsSource: true,
          ownsTarget: true,
          desiredState: 'running',
          version: 1,
        }),
      ];
      // `kubectl apply -f`, as the README's GitOps path says.
      const file = join(work, 'gitops-pipeline.yaml');
      writeFileSync(file, manifests.map((m) => JSON.stringify(m)).join('\n---\n'));
      const applied = await kubectl('apply', '-f', file);
      expect([applied.code, applied.out]).toEqual([
        0,
        expect.stringContaining(`pipeline.sluice.dev/${gitopsPipelineId} created`),
      ]);
      const cr = await wait(
        'the applied Pipeline to be live and Ready',
        async () => {
          const p: Any = await custom.getNamespacedCustomObject({
            group: 'sluice.dev',
            version: 'v1alpha1',
            namespace: NS,
            plural: 'pipelines',
            name: gitopsPipelineId,
          });
          if (p.status?.state === 'error') throw new Error(`pipeline in error: ${p.status.message}`);
          const ready = p.status?.conditions?.find((c: Any) => c.type === 'Ready');
          return p.status?.state === 'live' && ready?.status === 'True' ? p : undefined;
        },
        10 * MINUTE,
      );
      expect(cr.status.observedGeneration).toBe(cr.metadata.generation);
      expect((await waitState(gitopsPipelineId, 'live')).name).toBe('orders-gitops');
      const producer = newProducer([c.hostBrokers]);
      try {
        await producer.send({
          messages: Array.from({ length: 300 }, (_, n) => ({
            topic,
            key: String(n),
            value: JSON.stringify({ id: n, amount: n }),
          })),
        });
      } finally {
        await producer.close();
      }
      await allOrders('orders_gitops', 300);
      // `kubectl get sluice`: every kind of the category, with its printer columns.
      const listed = await kubectl('get', 'sluice');
      expect(listed.code).toBe(0);
      const line = listed.out
        .split('\n')
        .find((l) => l.startsWith(`pipeline.sluice.dev/${gitopsPipelineId}`));
      expect(line?.split(/\s+/)).toEqual(expect.arrayContaining(['orders-gitops', 'live', 'True']));
      // Removed from the repository: `kubectl delete` of the pipeline and its
      // connectors completes with the operator running (its finalizers, the
      // data model going with its connector), and the workers go.
      const removed = await kubectl(
        'delete', `pipeline/${gitopsPipelineId}`, `subscription/${subscriptionId}`,
        `connector/${sourceId}`, `connector/${targetId}`, '--timeout=120s',
      ); // prettier-ignore
      expect([removed.code, removed.out]).toEqual([
        0,
        expect.stringContaining(`connector.sluice.dev "${targetId}" deleted`),
      ]);
      await wait(
        'the data model to go with its connector, and the workers',
        async () => {
          const models = (await kubectl('get', 'datamodels', '-o', 'name')).out;
          const deployments = await workerDeployments();
          return !models.includes(modelId) &&
            !deployments.some((d) => d.endsWith(sourceId) || d.endsWith(targetId))
            ? true
            : undefined;
        },
        3 * MINUTE,
      );
    },
    15 * MINUTE,
  );

  it(
    'the operator leader pod deleted: the other replica takes the Lease and reconciles a change made meanwhile',
    async () => {
      const operator = (await readyDeployment(kc, NS, RELEASE, 'operator'))!;
      const leases = kc.makeApiClient(CoordinationV1Api);
      const leaseName = operator.metadata!.name!;
      const before = (await leases.readNamespacedLease({ name: leaseName, namespace: NS })).spec!
        .holderIdentity!;
      // At once, as when its node dies: the Lease is not released, it expires.
      await core.deleteNamespacedPod({ name: before, namespace: NS, gracePeriodSeconds: 0 });
      // Meanwhile, a user pauses the pipeline.
      expect((await api('POST', `/api/pipelines/${pipelineId}/pause`, { token })).status).toBe(202);
      const after = await wait(
        'another operator replica to hold the Lease',
        async () => {
          const id = (await leases.readNamespacedLease({ name: leaseName, namespace: NS })).spec
            ?.holderIdentity;
          return id && id !== before ? id : undefined;
        },
        5 * MINUTE,
      );
      expect(after).not.toBe(before);
      await waitState(pipelineId, 'paused');
      // And the new leader carries out the next change too.
      expect((await api('POST', `/api/pipelines/${pipelineId}/start`, { token })).status).toBe(202);
      await waitState(pipelineId, 'live');
    },
    10 * MINUTE,
  );

  it(
    'the API server cut off for 30 s: reads keep answering, and afterwards everything reconverges',
    async () => {
      const cutAt = new Date();
      await c.freezeApiServer();
      const readsDuringCut: number[] = [];
      try {
        // The REST API reads from its PostgreSQL mirror, not from the API server.
        for (let i = 0; i < 6; i++) {
          readsDuringCut.push((await api('GET', `/api/pipelines/${pipelineId}`, { token })).status);
          await sleep(5000);
        }
      } finally {
        await c.thawApiServer();
      }
      expect(readsDuringCut).toEqual([200, 200, 200, 200, 200, 200]);
      // Changes after the cut are carried out: a pause stops the workers, a start brings them back.
      expect((await api('POST', `/api/pipelines/${pipelineId}/pause`, { token })).status).toBe(202);
      await waitState(pipelineId, 'paused');
      expect((await api('POST', `/api/pipelines/${pipelineId}/start`, { token })).status).toBe(202);
      await waitState(pipelineId, 'live');
      await produceOrders(21_500, 22_000);
      await allOrders(TABLE, 22_000);
      // Every Sluice object's status is current again.
      await wait(
        'every custom resource to have observedGeneration == generation',
        async () => {
          const stale: string[] = [];
          for (const plural of ['connectors', 'datamodels', 'subscriptions', 'pipelines']) {
            const list: Any = await custom.listNamespacedCustomObject({
              group: 'sluice.dev',
              version: 'v1alpha1',
              namespace: NS,
              plural,
            });
            for (const o of list.items)
              if (o.status?.observedGeneration !== o.metadata.generation)
                stale.push(`${plural}/${o.metadata.name}`);
          }
          return stale.length === 0 ? true : undefined;
        },
        5 * MINUTE,
      );
      // The operators' errors since the cut are all about the API server being unreachable.
      const pods = (
        await core.listNamespacedPod({ namespace: NS, labelSelector: componentSelector(RELEASE, 'operator') })
      ).items;
      const unexplained: string[] = [];
      for (const pod of pods) {
        const log = await core.readNamespacedPodLog({
          name: pod.metadata!.name!,
          namespace: NS,
          sinceTime: cutAt.toISOString(),
        } as Any);
        for (const line of String(log).split('\n')) {
          let entry: Any;
          try {
            entry = JSON.parse(line);
          } catch {
            continue;
          }
          if (
            entry.level >= 50 &&
            !/ECONNREFUSED|ETIMEDOUT|ECONNRESET|timed? ?out|socket hang up|aborted|watch|Lease|lease/i.test(
              line,
            )
          )
            unexplained.push(line);
        }
      }
      expect(unexplained).toEqual([]);
    },
    15 * MINUTE,
  );

  it(
    'helm upgrade to the image of a newer commit, with the CRDs applied first as the chart README says: gateway, operator and workers roll onto the new code, no order lost',
    async () => {
      const nextTag = c.nextImage.split(':').pop()!;
      expect(c.nextImage).toBe(`${imageRepository()}:${nextTag}`);
      const reportedVersion = async () =>
        (await api('GET', '/api/config/deployment', { token })).body?.version as string | undefined;
      const before = await reportedVersion();
      expect(before).toBeDefined();
      expect(before).not.toBe(c.nextVersion);
      // The installed Pipeline CRD as an older release had it: without the Team column.
      const older = await kubectl(
        'patch', 'crd', 'pipelines.sluice.dev', '--type=json',
        '-p', JSON.stringify([{ op: 'remove', path: '/spec/versions/0/additionalPrinterColumns/3' }]),
      ); // prettier-ignore
      expect(older.code).toBe(0);
      // Team is a wide column (priority 1): `kubectl get pipelines -o wide`.
      const columns = async () =>
        (await kubectl('get', 'pipelines', '-o', 'wide')).out.split('\n')[0]!.split(/\s{2,}/);
      expect(await columns()).not.toContain('TEAM');
      // The chart README's step: the new chart's CRDs, server-side, before the release.
      const crds = await kubectl('apply', '--server-side', '--force-conflicts', '-f', join(CHART, 'crds'));
      expect(crds.code).toBe(0);
      expect(await columns()).toContain('TEAM');
      const { source_connector_id: source } = await pipelineState(pipelineId);
      /** The running pods' image references and the image IDs their containers run. */
      const running = async () => {
        const pods = [
          ...(
            await core.listNamespacedPod({
              namespace: NS,
              labelSelector: componentSelector(RELEASE, 'gateway'),
            })
          ).items,
          ...(
            await core.listNamespacedPod({
              namespace: NS,
              labelSelector: componentSelector(RELEASE, 'operator'),
            })
          ).items,
          ...(
            await core.listNamespacedPod({
              namespace: WORKERS,
              labelSelector: `sluice.dev/worker=sluice-worker-${source}`,
            })
          ).items,
        ].filter((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
        return {
          images: pods.flatMap((p) => p.spec!.containers.map((k) => k.image!)),
          ids: pods.flatMap((p) => (p.status!.containerStatuses ?? []).map((k) => k.imageID)),
        };
      };
      const old = await running();
      expect(new Set(old.images)).toEqual(new Set([c.image]));
      const producing = produceOrders(22_000, 32_000, 500);
      const upgrade = await helmRun(
        'upgrade',
        RELEASE,
        CHART,
        '--reuse-values',
        '--set',
        `image.tag=${nextTag}`,
        '--wait',
        '--timeout',
        '8m',
      );
      expect(upgrade.code).toBe(0);
      await producing;
      const rolled = await wait(
        'the gateway, the operator and the workers to run the next release',
        async () => {
          const now = await running();
          return now.images.length >= 5 && now.images.every((i) => i === c.nextImage) ? now : undefined;
        },
        8 * MINUTE,
      );
      // Other code, not only another tag: no container runs an image it ran before.
      expect(rolled.ids.filter((id) => old.ids.includes(id))).toEqual([]);
      // The gateway answers with the new code's version once the old pods have
      // drained (a kept-alive connection is served by its old pod until that
      // pod closes it), and no request fails meanwhile.
      const failures: string[] = [];
      await wait(
        'ten answers in a row from the new version',
        async () => {
          const seen: (string | undefined)[] = [];
          for (let i = 0; i < 10; i++) {
            const r = await api('GET', '/api/config/deployment', { token }).catch((e: Error) => {
              failures.push(e.message);
              return undefined;
            });
            if (r && r.status !== 200) failures.push(`HTTP ${r.status}`);
            seen.push(r?.body?.version);
          }
          return seen.every((v) => v === c.nextVersion) ? seen : undefined;
        },
        2 * MINUTE,
      );
      expect(failures).toEqual([]);
      await allOrders(TABLE, 32_000, 8 * MINUTE);
      expect((await pipelineState(pipelineId)).state).toBe('live');
    },
    20 * MINUTE,
  );

  it(
    'a gateway pod deleted: the API keeps answering through the other replica',
    async () => {
      const [victim] = (
        await core.listNamespacedPod({ namespace: NS, labelSelector: componentSelector(RELEASE, 'gateway') })
      ).items;
      await core.deleteNamespacedPod({ name: victim!.metadata!.name!, namespace: NS });
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) {
        statuses.push(
          (await api('GET', `/api/pipelines/${pipelineId}`, { token }).catch(() => ({ status: 0 }))).status,
        );
        await sleep(250);
      }
      expect(statuses.filter((s) => s !== 200)).toEqual([]);
      await wait(
        'the gateway to be back at two replicas',
        () => readyDeployment(kc, NS, RELEASE, 'gateway'),
        5 * MINUTE,
      );
    },
    10 * MINUTE,
  );

  it(
    "helm uninstall with live pipelines: no worker, managed Secret or finalizer left; the custom resources and the user's Secret kept",
    async () => {
      const kinds = 'connectors,datamodels,subscriptions,pipelines';
      const before = await kubectl('get', kinds, '-o', 'name');
      expect(before.code).toBe(0);
      const uninstall = await helmRun('uninstall', RELEASE, '--wait', '--timeout', '5m');
      expect([uninstall.code, uninstall.out]).toEqual([
        0,
        expect.stringContaining('Sluice finalizers removed from'),
      ]);
      expect(uninstall.out).toContain('control plane stopped: 2 Deployment(s) at 0 replicas');
      const managed = 'app.kubernetes.io/managed-by=sluice-operator';
      const apps = kc.makeApiClient(AppsV1Api);
      expect(
        (await apps.listNamespacedDeployment({ namespace: WORKERS, labelSelector: managed })).items,
      ).toEqual([]);
      await wait(
        'the worker pods to be gone',
        async () =>
          (await core.listNamespacedPod({ namespace: WORKERS, labelSelector: managed })).items.length
            ? undefined
            : true,
        3 * MINUTE,
      );
      const secrets = (await core.listNamespacedSecret({ namespace: WORKERS })).items;
      expect(secrets.filter((x) => x.metadata?.labels?.['sluice.dev/managed'] === 'true')).toEqual([]);
      expect(secrets.map((x) => x.metadata!.name)).toContain('dwh-password');
      // The user's definitions stay, with no Sluice finalizer: a delete completes with no operator.
      const after = await kubectl('get', kinds, '-o', 'name');
      expect(after.out.split('\n').sort()).toEqual(before.out.split('\n').sort());
      const objects: Any = JSON.parse((await kubectl('get', kinds, '-o', 'json')).out);
      expect(
        objects.items.flatMap((o: Any) =>
          (o.metadata.finalizers ?? []).filter((f: string) => f.startsWith('sluice.dev/')),
        ),
      ).toEqual([]);
      const deleted = await kubectl('delete', kinds, '--all', '--timeout=60s');
      expect(deleted.code).toBe(0);
    },
    10 * MINUTE,
  );
}
