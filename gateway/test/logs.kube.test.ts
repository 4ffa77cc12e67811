import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import {
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  RbacAuthorizationV1Api,
  type V1PolicyRule,
} from '@kubernetes/client-node';
import { workerId } from '@sluice/shared/ports';
import { DeploymentRuntime, defaultPodTemplate, deploymentName, silentLogger } from '@sluice/operator';
import { KubeletLogServer } from '@sluice/testing/kubelet-log-server';
import { KubeletStandIn } from '@sluice/testing/kubelet-stand-in';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { configs, createConnector, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';
import { logStreamServer, specProtocols } from './log-stream-client.js';

// Worker logs on Kubernetes (spec 4.4/4.5), end to end through a real
// kube-apiserver: the gateway runs without an operator, as the chart deploys
// it, with exactly the chart's gateway Role (charts/sluice/templates/rbac.yaml)
// through impersonation. What the operator and the cluster would do is played
// here: the operator's DeploymentRuntime writes the worker Deployment,
// KubeletStandIn the pod on a node, and KubeletLogServer is that node's kubelet,
// to which the API server proxies `pods/{pod}/log`. So a log line travels
// kubelet → kube-apiserver → gateway → HTTP or WebSocket client, as in a cluster.

const KINDS = ['connectors', 'datamodels', 'subscriptions', 'pipelines', 'warehouses'];
const ALL = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete'];
/** The chart's gateway Role on the kinds of every mirrored namespace (`$gatewayKinds`). */
const GATEWAY_KINDS: V1PolicyRule[] = [
  { apiGroups: ['sluice.dev'], resources: KINDS, verbs: ALL },
  {
    apiGroups: ['sluice.dev'],
    resources: KINDS.map((k) => `${k}/status`),
    verbs: ['get', 'update', 'patch'],
  },
];
/** And in the release namespace (`$gatewayOwn`): Secrets, and the workers, read only. */
const GATEWAY_HOME: V1PolicyRule[] = [
  ...GATEWAY_KINDS,
  { apiGroups: [''], resources: ['secrets'], verbs: ALL },
  { apiGroups: ['apps'], resources: ['deployments'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: [''], resources: ['pods/log'], verbs: ['get'] },
];

describeWithKube('worker logs on Kubernetes: pod logs through the API server (spec 4.4, 4.5)', () => {
  const tag = randomUUID().slice(0, 6);
  const [home, extra] = [`logs-${tag}`, `logs-extra-${tag}`];
  const node = `logs-node-${tag}`;
  const gatewayUser = `sluice-gateway-${tag}`;
  const kc = new KubeConfig();
  let kubelet: KubeletLogServer;
  let standIn: KubeletStandIn;
  let operator: DeploymentRuntime;
  let gw: TestGateway;
  let t: TeamSetup;
  let streams: Awaited<ReturnType<typeof logStreamServer>>;
  // PostgreSQL when the wrappers started one, as in production; else PGlite.
  const dbKind = databaseKinds().at(-1)!;

  /** The gateway's identity: the admin's credentials, impersonating a user bound to the chart's Role only. */
  async function gatewayKubeconfig(path: string): Promise<string> {
    const gateway = new KubeConfig();
    gateway.loadFromOptions({
      clusters: kc.clusters,
      users: [{ ...kc.getCurrentUser()!, name: 'gateway', impersonateUser: gatewayUser }],
      contexts: [{ name: 'gateway', cluster: kc.getCurrentCluster()!.name, user: 'gateway' }],
      currentContext: 'gateway',
    });
    await writeFile(path, gateway.exportConfig(), { mode: 0o600 });
    return path;
  }

  async function bindRole(namespace: string, rules: V1PolicyRule[]): Promise<void> {
    const rbac = kc.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({ namespace, body: { metadata: { name: 'sluice-gateway' }, rules } });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'sluice-gateway' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'sluice-gateway' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: gatewayUser }],
      },
    });
  }

  /** The authorizer learns of new bindings through a watch: waits until the gateway's user may read pods. */
  async function untilBound(kubeconfig: string): Promise<void> {
    const as = new KubeConfig();
    as.loadFromFile(kubeconfig);
    const core = as.makeApiClient(CoreV1Api);
    for (let attempt = 0; ; attempt++) {
      try {
        await core.listNamespacedPod({ namespace: home });
        return;
      } catch (err) {
        if (attempt > 50) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  /**
   * What the operator and the cluster do for a running connector of `namespace`:
   * its worker Deployment (in the worker namespace, `home`), a ready pod of it on
   * the stand-in's node, and the lines the container printed. Returns the pod's name.
   */
  async function runWorker(namespace: string, connectorId: string, lines: string[]): Promise<string> {
    const id = workerId(namespace, connectorId);
    await operator.ensure({
      id,
      namespace,
      config: { connector_id: connectorId, role: 'source' },
      configHash: 'h1',
      labels: { 'sluice.dev/connector-id': connectorId },
    });
    const deployment = deploymentName(id, home);
    const pod = (await standIn.runPod(deployment, { ready: true })).metadata!.name!;
    await standIn.rollOut(deployment, 1);
    kubelet.write(home, pod, 'worker', ...lines);
    return pod;
  }

  const logLine = (msg: string) => JSON.stringify({ level: 'info', msg });
  /** The query of each request the API server made to the kubelet for the pod's worker container. */
  const asked = (pod: string) =>
    kubelet.requests
      .map((r) => new URL(r, 'https://kubelet'))
      .filter((u) => u.pathname === `/containerLogs/${home}/${pod}/worker`)
      .map((u) => ({ follow: u.searchParams.get('follow'), tailLines: u.searchParams.get('tailLines') }));
  const getLogs = (id: string, query = '', auth = t.owner.auth) =>
    gw.http.get(`/api/connectors/${id}/logs${query}`).set(auth);

  /** GET until the gateway's watch has seen the worker's pod (its informer follows the API server). */
  async function untilLines(id: string, query = ''): Promise<string[]> {
    const deadline = Date.now() + 15_000;
    for (;;) {
      const res = await getLogs(id, query);
      expect(res.status).toBe(200);
      const lines = res.body.lines as string[];
      if (lines.length || Date.now() > deadline) return lines;
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** Until the API server holds a follow of the pod's log open at the kubelet (lines written then reach the client). */
  async function untilFollowed(pod: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (kubelet.following(home, pod, 'worker') === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  beforeAll(async () => {
    const admin = testKubeConfig() as string;
    kc.loadFromFile(admin);
    await installCrds(admin);
    const core = kc.makeApiClient(CoreV1Api);
    for (const name of [home, extra]) await core.createNamespace({ body: { metadata: { name } } });
    await bindRole(home, GATEWAY_HOME);
    await bindRole(extra, GATEWAY_KINDS);
    kubelet = await KubeletLogServer.start();
    await kubelet.registerNode(core, node);
    standIn = new KubeletStandIn(kc, home, node);
    operator = new DeploymentRuntime({
      kubeConfig: kc,
      namespace: home,
      podTemplate: defaultPodTemplate('registry.example/sluice:test'),
      log: silentLogger,
    });
    const kubeconfig = await gatewayKubeconfig(`${admin}.gateway-${tag}`);
    await untilBound(kubeconfig);
    gw = await startTestGateway(dbKind, {
      SLUICE_CLUSTER_ADAPTER: 'kubernetes',
      SLUICE_NAMESPACE: home,
      SLUICE_WATCH_NAMESPACES: `${home},${extra}`,
      KUBECONFIG: kubeconfig,
    });
    t = await setupTeam(gw, 'kube-logs');
    streams = await logStreamServer(gw.app);
  }, 60_000);

  afterAll(async () => {
    await streams?.close();
    // The tokens the clients sent never reach a log line.
    for (const u of t ? [t.owner, t.member, t.outsider] : []) {
      expect(gw.recorded().logs.find((l) => l.includes(u.token))).toBeUndefined();
    }
    await gw?.close();
    await operator?.close();
    await kubelet?.close();
  });

  it("GET answers the kubelet's lines of the worker container, the tail asked for", async () => {
    const c = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'orders',
      'KAFKA_SOURCE',
      configs.kafkaSource('o'),
    );
    const pod = await runWorker(home, c.id, ['first', 'second', 'third'].map(logLine));

    expect(await untilLines(c.id)).toEqual(['first', 'second', 'third'].map(logLine));
    // The API server asked the pod's kubelet for the default tail, without following.
    expect(asked(pod)).toContainEqual({ follow: null, tailLines: '200' });

    const two = await getLogs(c.id, '?tail=2', t.member.auth);
    expect([two.status, two.body]).toEqual([200, { lines: ['second', 'third'].map(logLine) }]);
    expect(asked(pod)).toContainEqual({ follow: null, tailLines: '2' });
  });

  it('finds the worker of a connector applied in an extra watched namespace (its worker id names that namespace)', async () => {
    const id = randomUUID();
    await KubernetesObjectApi.makeApiClient(kc).create({
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Connector',
      metadata: { name: id, namespace: extra, labels: { 'sluice.dev/team-id': t.teamId } },
      spec: {
        name: 'extra-orders',
        teamId: t.teamId,
        connectorType: 'KAFKA_SOURCE',
        configuration: { topic: 'extra', bootstrap_servers: 'kafka-0.kafka:9092' },
        desiredState: 'stopped',
      },
    });
    await gw.ctx.mirror.settled();
    // The operator names the Deployment after the connector's namespace too: sluice-worker-<ns>-<id>.
    const pod = await runWorker(extra, id, [logLine('from the extra namespace')]);
    expect(pod.startsWith(`sluice-worker-${extra}-`)).toBe(true);
    expect(await untilLines(id)).toEqual([logLine('from the extra namespace')]);
  });

  it('GET: 403 for a connector of another team, empty when the connector has no worker', async () => {
    const c = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'secret-team',
      'KAFKA_SOURCE',
      configs.kafkaSource('s'),
    );
    await runWorker(home, c.id, [logLine('not for outsiders')]);
    await untilLines(c.id);
    const outsider = await getLogs(c.id, '', t.outsider.auth);
    expect(outsider.status).toBe(403);
    expect(JSON.stringify(outsider.body)).not.toContain('not for outsiders');

    const idle = await createConnector(
      gw,
      t.owner,
      t.teamId,
      'idle',
      'KAFKA_SOURCE',
      configs.kafkaSource('i'),
    );
    const res = await getLogs(idle.id);
    expect([res.status, res.body]).toEqual([200, { lines: [] }]);
  });

  it('the WebSocket stream with the spec subprotocols: the tail, then lines the worker writes later', async () => {
    const c = await createConnector(gw, t.owner, t.teamId, 'live', 'KAFKA_SOURCE', configs.kafkaSource('l'));
    const pod = await runWorker(home, c.id, ['one', 'two'].map(logLine));
    await untilLines(c.id);

    const client = streams.open(`/connectors/${c.id}/logs?tail=1`, specProtocols(t.member.token));
    await client.opened;
    expect(client.ws.protocol).toBe('Authorization');
    await client.until((f) => f.line === logLine('two'));
    // The API server holds a follow open at the kubelet: now the worker writes on.
    await untilFollowed(pod);
    expect(asked(pod)).toContainEqual({ follow: 'true', tailLines: '1' });
    kubelet.write(home, pod, 'worker', logLine('three'), logLine('four'));
    await client.until((f) => f.line === logLine('four'));
    expect(client.frames).toEqual(['two', 'three', 'four'].map((m) => ({ line: logLine(m) })));

    // Not a member of the owning team: refused after the handshake, nothing sent.
    const outsider = streams.open(`/connectors/${c.id}/logs`, specProtocols(t.outsider.token));
    expect(await outsider.closed).toEqual({ code: 1008, reason: 'You are not a member of this team' });
    expect(outsider.frames).toEqual([]);

    client.ws.close(1000);
    expect((await client.closed).code).toBe(1000);
  });

  it("the stream goes on with the pod that replaces the worker's pod, same configuration (a reschedule)", async () => {
    const c = await createConnector(gw, t.owner, t.teamId, 'moved', 'KAFKA_SOURCE', configs.kafkaSource('m'));
    const first = await runWorker(home, c.id, [logLine('on the first node')]);
    await untilLines(c.id);
    const client = streams.open(`/connectors/${c.id}/logs`, specProtocols(t.owner.token));
    await client.until((f) => f.line === logLine('on the first node'));
    await untilFollowed(first);

    // Evicted and rescheduled: the pod goes, a new one of the same template
    // (same configuration hash, no restart counted) takes its place.
    const deployment = deploymentName(workerId(home, c.id), home);
    await standIn.removePods(deployment);
    const second = (await standIn.runPod(deployment, { ready: true })).metadata!.name!;
    expect(second).not.toBe(first);
    kubelet.write(home, second, 'worker', logLine('on the second node'));
    await client.until((f) => f.line === logLine('on the second node'));
    expect(client.frames).toEqual(
      ['on the first node', 'on the second node'].map((m) => ({ line: logLine(m) })),
    );
    client.ws.close(1000);
    await client.closed;
  });

  it("a pipeline's stream: both workers' lines, tagged with their side", async () => {
    const res = await gw.http
      .post('/api/pipelines/')
      .set(t.owner.auth)
      .send({
        name: 'piped',
        team_id: t.teamId,
        source_name: 'piped-src',
        source_type: 'KAFKA_SOURCE',
        source_config: configs.kafkaSource('piped'),
        target_name: 'piped-dst',
        target_type: 'KAFKA_TARGET',
        target_config: { bootstrap_server: 'kafka:9092' },
      });
    expect(res.status).toBe(201);
    const p = (await gw.http.get(`/api/pipelines/${res.body.id}`).set(t.owner.auth)).body;
    await runWorker(home, p.source_connector_id as string, [logLine('source up')]);
    const targetPod = await runWorker(home, p.target_connector_id as string, [logLine('target up')]);
    await untilLines(p.target_connector_id as string);

    const client = streams.open(`/pipelines/${res.body.id}/logs`, specProtocols(t.owner.token));
    await client.until((f) => f.side === 'source' && f.line === logLine('source up'));
    await client.until((f) => f.side === 'target' && f.line === logLine('target up'));
    await untilFollowed(targetPod);
    kubelet.write(home, targetPod, 'worker', logLine('target wrote on'));
    await client.until((f) => f.side === 'target' && f.line === logLine('target wrote on'));
    client.ws.close(1000);
    await client.closed;
  });
});
