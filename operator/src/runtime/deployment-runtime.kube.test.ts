import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { CoreV1Api, KubeConfig, type V1PodTemplateSpec } from '@kubernetes/client-node';
import { WORKER_FINALIZER, type ConnectorResource } from '@sluice/shared/catalog';
import { KubernetesCluster } from '@sluice/shared/cluster';
import { workerId, type WorkerSpec } from '@sluice/shared/ports';
import { secretEnvName } from '@sluice/shared/secrets';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { KubeletStandIn } from '@sluice/testing/kubelet-stand-in';
import { startController } from '../../test/start-controller.js';
import { silentLogger } from '../controller/logger.js';
import { DeploymentRuntime } from './deployment-runtime.js';
import { deploymentName } from './worker-deployment.js';

// The Deployment worker runtime on a real kube-apiserver: the Deployments it
// writes (validated by the API server), what it concludes from Deployment and
// pod status, and the operator driving a Connector through it. No controller
// manager or kubelet runs here: KubeletStandIn writes the status they would.

/** What the chart hands the operator (charts/sluice/templates/worker-template.yaml). */
const TEMPLATE: V1PodTemplateSpec = {
  metadata: { labels: { 'app.kubernetes.io/part-of': 'sluice' } },
  spec: {
    serviceAccountName: 'sluice-worker',
    automountServiceAccountToken: false,
    securityContext: { runAsNonRoot: true, runAsUser: 10001 },
    containers: [
      {
        name: 'worker',
        image: 'registry.example/sluice:0.1.0',
        args: ['dataplane/dist/main.js'],
        resources: { requests: { cpu: '100m', memory: '256Mi' }, limits: { memory: '512Mi' } },
        securityContext: { readOnlyRootFilesystem: true, allowPrivilegeEscalation: false },
        volumeMounts: [{ name: 'tmp', mountPath: '/tmp' }],
      },
    ],
    volumes: [{ name: 'tmp', emptyDir: {} }],
  },
};

describeWithKube('Deployment worker runtime on a real API server', () => {
  const kc = new KubeConfig();
  const ns = `dr-${randomUUID().slice(0, 8)}`;
  let runtime: DeploymentRuntime;
  let kubelet: KubeletStandIn;
  const seen: string[] = [];

  const spec = (name: string, configHash: string, config: Record<string, unknown> = {}): WorkerSpec => ({
    id: workerId(ns, name),
    namespace: ns,
    config: { connector_id: name, role: 'source', ...config },
    configHash,
    labels: { 'sluice.dev/connector-id': name },
  });

  async function until<T>(what: string, read: () => Promise<T>, test: (v: T) => boolean, ms = 15_000) {
    const deadline = Date.now() + ms;
    let v = await read();
    while (!test(v)) {
      if (Date.now() > deadline) throw new Error(`${what}: still ${JSON.stringify(v)}`);
      await new Promise((r) => setTimeout(r, 50));
      v = await read();
    }
    return v;
  }
  const phaseOf = (name: string) => () => runtime.observe(workerId(ns, name));
  /** A running KAFKA_SOURCE Connector named `name`, as the gateway or kubectl creates it. */
  const createConnector = (cluster: KubernetesCluster, name: string) =>
    cluster.create<ConnectorResource>({
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Connector',
      metadata: { name, namespace: ns },
      spec: {
        name,
        teamId: randomUUID(),
        connectorType: 'KAFKA_SOURCE',
        configuration: { topic: 'orders', bootstrap_servers: 'kafka:9092' },
        desiredState: 'running',
      },
    });
  /** The Deployment named `deployment` as the kubelet stand-in reads it; undefined while there is none. */
  const deploymentNamed = (deployment: string) => () => kubelet.deployment(deployment).catch(() => undefined);

  beforeAll(async () => {
    kc.loadFromFile(testKubeConfig() as string);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
    runtime = new DeploymentRuntime({
      kubeConfig: kc,
      namespace: ns,
      podTemplate: TEMPLATE,
      log: silentLogger,
    });
    runtime.subscribe((id) => seen.push(id));
    kubelet = new KubeletStandIn(kc, ns);
  });
  afterAll(async () => {
    await runtime.close();
  });

  it('writes one Deployment per worker: the chart template plus the worker contract, no secret value', async () => {
    const password = { valueFrom: { secretKeyRef: { name: 'sluice-conn-1', key: 'password' } } };
    await runtime.ensure(spec('c1', 'h1', { configuration: { host: 'db', password } }));
    const d = await kubelet.deployment('sluice-worker-c1');
    expect(d.metadata?.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'sluice-operator',
      'sluice.dev/worker': 'sluice-worker-c1',
      'sluice.dev/connector-id': 'c1',
    });
    expect(d.spec?.strategy?.type).toBe('Recreate');
    const pod = d.spec!.template;
    expect(pod.spec?.serviceAccountName).toBe('sluice-worker');
    expect(pod.spec?.securityContext?.runAsNonRoot).toBe(true);
    const c = pod.spec!.containers[0]!;
    expect(c.image).toBe('registry.example/sluice:0.1.0');
    expect(c.resources?.limits?.memory).toBe('512Mi');
    expect(c.readinessProbe?.httpGet?.path).toBe('/readyz');
    expect(c.env).toEqual(
      expect.arrayContaining([
        { name: 'SLUICE_WORKER_CONFIG', value: '/etc/sluice-worker/config.json' },
        {
          name: secretEnvName({ name: 'sluice-conn-1', key: 'password' }),
          valueFrom: { secretKeyRef: { name: 'sluice-conn-1', key: 'password' } },
        },
      ]),
    );
    // The configuration reaches the pod as a file of the downward API: references only.
    expect(JSON.parse(pod.metadata!.annotations!['sluice.dev/worker-config']!)).toMatchObject({
      configuration: { host: 'db', password },
    });
    expect(pod.spec?.volumes?.map((v) => v.name)).toEqual(['tmp', 'sluice-worker-config']);
  });

  it('changes nothing for the same hash and rolls the Deployment for a new one', async () => {
    await runtime.ensure(spec('c2', 'h1'));
    const first = await kubelet.deployment('sluice-worker-c2');
    await runtime.ensure(spec('c2', 'h1'));
    expect((await kubelet.deployment('sluice-worker-c2')).metadata?.resourceVersion).toBe(
      first.metadata?.resourceVersion,
    );
    await runtime.ensure(spec('c2', 'h2', { configuration: { topic: 'new' } }));
    const second = await kubelet.deployment('sluice-worker-c2');
    expect(second.metadata?.generation).toBe(2);
    expect(second.spec?.template.metadata?.annotations?.['sluice.dev/config-hash']).toBe('h2');
  });

  it("rolls the Deployment when the chart's pod template changed (helm upgrade to a new image), the configuration not", async () => {
    await runtime.ensure(spec('c3', 'h1'));
    const first = await kubelet.deployment('sluice-worker-c3');
    // The operator of the upgraded release: the same worker, a template with another image.
    const upgraded = new DeploymentRuntime({
      kubeConfig: kc,
      namespace: ns,
      podTemplate: {
        ...TEMPLATE,
        spec: {
          ...TEMPLATE.spec!,
          containers: TEMPLATE.spec!.containers.map((c) => ({
            ...c,
            image: 'registry.example/sluice:0.2.0',
          })),
        },
      },
      log: silentLogger,
    });
    try {
      // Seen by the upgraded operator as a worker to write again, so its connector's plan does.
      expect((await upgraded.observe(workerId(ns, 'c3')))?.configHash).toBe('');
      await upgraded.ensure(spec('c3', 'h1'));
      await until(
        'the rolled worker observed with its configuration',
        async () => (await upgraded.observe(workerId(ns, 'c3')))?.configHash,
        (h) => h === 'h1',
      );
      const second = await kubelet.deployment('sluice-worker-c3');
      expect(second.metadata?.generation).toBe((first.metadata?.generation ?? 1) + 1);
      expect(second.spec?.template.spec?.containers[0]?.image).toBe('registry.example/sluice:0.2.0');
      // And once rolled, the same template changes nothing.
      await upgraded.ensure(spec('c3', 'h1'));
      expect((await kubelet.deployment('sluice-worker-c3')).metadata?.resourceVersion).toBe(
        second.metadata?.resourceVersion,
      );
    } finally {
      await upgraded.close();
    }
  });

  it('observes starting → ready from Deployment and pod status, and tells subscribers', async () => {
    await runtime.ensure(spec('c3', 'h1'));
    expect((await runtime.observe(workerId(ns, 'c3')))?.phase).toBe('starting');
    const pod = await kubelet.runPod('sluice-worker-c3', { ready: false });
    await kubelet.rollOut('sluice-worker-c3', 0);
    expect((await until('c3 starting', phaseOf('c3'), (o) => o !== undefined))?.phase).toBe('starting');
    await kubelet.setPod(pod, { ready: true });
    await kubelet.rollOut('sluice-worker-c3', 1);
    const ready = await until('c3 ready', phaseOf('c3'), (o) => o?.phase === 'ready');
    expect(ready).toMatchObject({ configHash: 'h1', restarts: 0 });
    expect(seen).toContain(workerId(ns, 'c3'));
  });

  it('reports a crashed worker as failed with its termination message, and a missing Secret', async () => {
    await runtime.ensure(spec('c4', 'h1'));
    await kubelet.runPod('sluice-worker-c4', {
      ready: false,
      restartCount: 3,
      state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container' } },
      lastState: {
        terminated: { exitCode: 1, reason: 'Error', message: 'broker kafka:9092 refused the connection' },
      },
    });
    await kubelet.rollOut('sluice-worker-c4', 0);
    const failed = await until('c4 failed', phaseOf('c4'), (o) => o?.phase === 'failed');
    expect(failed?.message).toBe('the worker exited with code 1: broker kafka:9092 refused the connection');
    expect(failed?.restarts).toBe(3);

    await runtime.ensure(spec('c5', 'h1'));
    await kubelet.runPod('sluice-worker-c5', {
      ready: false,
      state: {
        waiting: { reason: 'CreateContainerConfigError', message: 'secret "sluice-conn-9" not found' },
      },
    });
    const stuck = await until('c5 failed', phaseOf('c5'), (o) => o?.phase === 'failed');
    expect(stuck?.message).toBe(
      'the worker cannot start (CreateContainerConfigError): secret "sluice-conn-9" not found',
    );
  });

  it('a Connector tells of its worker restarts as under the process runtime: kill -9, back to live, then CrashLoopBackOff to error', async () => {
    await installCrds(testKubeConfig() as string);
    const cluster = new KubernetesCluster({ kubeConfig: kc, namespace: ns });
    const stopController = startController(kc, cluster, runtime, ns);
    try {
      const name = `crash-${randomUUID().slice(0, 8)}`;
      await createConnector(cluster, name);
      const read = () => cluster.get<ConnectorResource>('Connector', ns, name);
      const deployment = `sluice-worker-${name}`;
      await until('deployment', deploymentNamed(deployment), (x) => x !== undefined);
      const pod = await kubelet.runPod(deployment, { ready: true });
      await kubelet.rollOut(deployment, 1);
      await until('live', read, (c) => c?.status?.state === 'live');

      // kill -9: the kubelet restarted the container at once (exit code 137), not ready yet.
      const killedAt = new Date('2026-11-26T12:00:00Z');
      await kubelet.rollOut(deployment, 0);
      await kubelet.setPod(pod, {
        ready: false,
        restartCount: 1,
        lastState: { terminated: { exitCode: 137, reason: 'Error', finishedAt: killedAt } },
      });
      const restarting = await until('building', read, (c) => c?.status?.worker?.restarts === 1);
      expect(restarting?.status?.state).toBe('building');
      expect(restarting?.status?.worker).toEqual({
        restarts: 1,
        consecutiveFailures: 1,
        lastTermination: {
          reason: 'Error',
          exitCode: 137,
          signal: 'SIGKILL',
          finishedAt: killedAt.toISOString(),
        },
      });
      await kubelet.setPod(pod, {
        ready: true,
        restartCount: 1,
        lastState: { terminated: { exitCode: 137, reason: 'Error', finishedAt: killedAt } },
      });
      await kubelet.rollOut(deployment, 1);
      const back = await until('live again', read, (c) => c?.status?.state === 'live');
      expect(back?.status?.worker).toMatchObject({ restarts: 1, consecutiveFailures: 0 });

      // Then it fails at once every time: CrashLoopBackOff, 3 restarts without ready: error, its own line.
      await kubelet.rollOut(deployment, 0);
      const crash = (restartCount: number) =>
        kubelet.setPod(pod, {
          ready: false,
          restartCount,
          state: {
            waiting: { reason: 'CrashLoopBackOff', message: 'back-off 20s restarting failed container' },
          },
          lastState: {
            terminated: {
              exitCode: 1,
              reason: 'Error',
              message: 'SASL authentication failed',
              finishedAt: new Date(killedAt.getTime() + restartCount * 1000),
            },
          },
        });
      await crash(2);
      const once = await until('one failure', read, (c) => c?.status?.worker?.restarts === 2);
      expect(once?.status?.state).toBe('building');
      await crash(4);
      const failed = await until('error', read, (c) => c?.status?.state === 'error');
      expect(failed?.status?.message).toBe(
        'The worker exited with code 1: SASL authentication failed (restarted 3 times without becoming ready; still retrying)',
      );
      expect(failed?.status?.worker).toMatchObject({
        restarts: 4,
        consecutiveFailures: 3,
        lastTermination: { exitCode: 1, message: 'SASL authentication failed' },
      });
    } finally {
      await stopController();
    }
  });

  it('stops: the Deployment goes at once, the worker is stopping until its pods are gone', async () => {
    await runtime.ensure(spec('c6', 'h1'));
    await kubelet.runPod('sluice-worker-c6', { ready: true });
    await runtime.stop(workerId(ns, 'c6'));
    await expect(kubelet.deployment('sluice-worker-c6')).rejects.toMatchObject({ code: 404 });
    expect((await until('c6 stopping', phaseOf('c6'), (o) => o?.phase === 'stopping'))?.phase).toBe(
      'stopping',
    );
    await kubelet.removePods('sluice-worker-c6');
    await until('c6 gone', phaseOf('c6'), (o) => o === undefined);
    await runtime.stop(workerId(ns, 'c6')); // idempotent
    expect((await runtime.list()).map((o) => o.id)).not.toContain(workerId(ns, 'c6'));
  });

  it('names workers of other namespaces apart, and shortens long names to a valid label', () => {
    expect(deploymentName('team-a/orders', 'team-a')).toBe('sluice-worker-orders');
    expect(deploymentName('team-b/orders', 'team-a')).toBe('sluice-worker-team-b-orders');
    const long = deploymentName(`team-b/${'x'.repeat(80)}`, 'team-a');
    expect(long.length).toBeLessThanOrEqual(63);
    expect(long).not.toBe(deploymentName(`team-b/${'x'.repeat(81)}`, 'team-a'));
  });

  it('the operator drives a Connector to live through its Deployment and removes it on deletion', async () => {
    await installCrds(testKubeConfig() as string);
    const cluster = new KubernetesCluster({ kubeConfig: kc, namespace: ns });
    const stopController = startController(kc, cluster, runtime, ns);
    try {
      const name = `conn-${randomUUID().slice(0, 8)}`;
      const created = await createConnector(cluster, name);
      const read = () => cluster.get<ConnectorResource>('Connector', ns, name);
      await until('building', read, (c) => c?.status?.state === 'building');
      const deployment = `sluice-worker-${name}`;
      const d = await until('deployment', deploymentNamed(deployment), (x) => x !== undefined);
      // Same namespace: the Deployment is owned by its Connector.
      expect(d?.metadata?.ownerReferences?.[0]).toMatchObject({
        kind: 'Connector',
        uid: created.metadata.uid,
      });
      await kubelet.runPod(deployment, { ready: true });
      await kubelet.rollOut(deployment, 1);
      const live = await until('live', read, (c) => c?.status?.state === 'live');
      expect(live?.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');

      await cluster.delete('Connector', ns, name);
      // The finalizer holds the Connector until the worker's pods are gone.
      await until('deployment deleted', deploymentNamed(deployment), (x) => !x);
      expect((await read())?.metadata.finalizers).toContain(WORKER_FINALIZER);
      await kubelet.removePods(deployment);
      await until('connector gone', read, (c) => c === undefined);
    } finally {
      await stopController();
    }
  });
});
