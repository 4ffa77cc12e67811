import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  AppsV1Api,
  CoordinationV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  setHeaderOptions,
  type V1Deployment,
} from '@kubernetes/client-node';
import { K3sContainer, type StartedK3sContainer } from '@testcontainers/k3s';
import { createWriteStream, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline as pipe } from 'node:stream/promises';
import { GenericContainer, getContainerRuntimeClient } from 'testcontainers';
import {
  CHART,
  MINUTE,
  ROOT,
  componentSelector as releaseComponent,
  diagnostics as clusterDiagnostics,
  ensureHelm,
  readyDeployment as readyComponent,
  restClient,
  run,
  until as waitUntil,
  type Any,
} from './support/cluster.js';

// The full-cluster suite: a real Kubernetes (k3s in a container), the image
// built from the repository's Dockerfile, the Helm chart installed with an
// in-cluster PostgreSQL, and a user going through the REST API:
//
//   1. start k3s (@testcontainers/k3s), build the image (testcontainers'
//      GenericContainer.fromDockerfile), `docker save` it and import it into
//      k3s's containerd (`k3s ctr images import`): no registry involved;
//   2. apply a PostgreSQL Deployment + Service, `helm install` charts/sluice
//      with values pointing at both, and wait for the gateway and the two
//      operator replicas (one holding the Lease) to be Ready;
//   3. through the gateway's NodePort: sign up, log in, create an
//      environment, a team and a pipeline, start it, and watch its state;
//   4. what `kubectl get pipelines` shows: the custom resource with its status.
//
// It needs a Docker engine. Without one (these development machines) the
// whole file is reported as SKIPPED with the reason — never as passed, and
// never failing `make test`. SLUICE_REQUIRE_DOCKER=1 (`npm run test:e2e`)
// turns the skip into a failure, for CI machines that do have Docker.
// e2e/README.md: how to run it, how long it takes, what it checks.

const NS = 'sluice';
const RELEASE = 'sluice';
const IMAGE_REPOSITORY = 'localhost/sluice';
const IMAGE_TAG = 'e2e';
const IMAGE = `${IMAGE_REPOSITORY}:${IMAGE_TAG}`;
// Kubernetes 1.37 as the test API server of `make test` (scripts/kube/versions.env).
const K3S_IMAGE = process.env.SLUICE_E2E_K3S_IMAGE || 'rancher/k3s:v1.37.1-k3s1';
const POSTGRES_IMAGE = process.env.SLUICE_E2E_POSTGRES_IMAGE || 'postgres:17-alpine';
// The gateway is reached through a NodePort of our own, published by the k3s container.
const NODE_PORT = 30080;

// ---------------------------------------------------------------------------
// Is there a Docker engine? testcontainers' own detection (DOCKER_HOST,
// ~/.testcontainers.properties, the Docker socket, rootless and Desktop
// sockets), decided when the file loads so the skip is visible in the report.

async function detectDocker(): Promise<{ ok: true; engine: string } | { ok: false; reason: string }> {
  const where = process.env.DOCKER_HOST
    ? `DOCKER_HOST=${process.env.DOCKER_HOST}`
    : `DOCKER_HOST unset, /var/run/docker.sock ${existsSync('/var/run/docker.sock') ? 'present' : 'absent'}`;
  try {
    const client = await getContainerRuntimeClient();
    const info = client.info.containerRuntime;
    return { ok: true, engine: `${info.host} (${info.operatingSystem}, ${info.architecture})` };
  } catch (e) {
    return { ok: false, reason: `${(e as Error).message}; ${where}` };
  }
}

const docker = await detectDocker();
const SUITE = 'e2e/k3s: the chart on k3s, a pipeline through the REST API';

if (docker.ok) {
  describe(SUITE, suite);
} else if (process.env.SLUICE_REQUIRE_DOCKER === '1') {
  describe(SUITE, () => {
    it('needs a Docker engine', () => {
      throw new Error(`SLUICE_REQUIRE_DOCKER=1 but there is no Docker engine (${docker.reason})`);
    });
  });
} else {
  // A file whose tests are all skipped gets no per-test lines in jest's report.
  console.warn(`e2e/k3s: skipped — no Docker engine (${docker.reason})`);
  describe.skip(`${SUITE} (skipped: no Docker engine)`, suite);
}

// ---------------------------------------------------------------------------

/** The in-cluster PostgreSQL of the test: one pod, data in an emptyDir. */
const POSTGRES_URL = `postgres://sluice:sluice-e2e@postgres.${NS}.svc.cluster.local:5432/sluice`;
const postgresDeployment: V1Deployment = {
  metadata: { name: 'postgres', namespace: NS, labels: { app: 'postgres' } },
  spec: {
    replicas: 1,
    selector: { matchLabels: { app: 'postgres' } },
    template: {
      metadata: { labels: { app: 'postgres' } },
      spec: {
        containers: [
          {
            name: 'postgres',
            image: POSTGRES_IMAGE,
            env: [
              { name: 'POSTGRES_USER', value: 'sluice' },
              { name: 'POSTGRES_PASSWORD', value: 'sluice-e2e' },
              { name: 'POSTGRES_DB', value: 'sluice' },
            ],
            ports: [{ containerPort: 5432, name: 'postgres' }],
            // Over TCP: during initdb the entrypoint's temporary server listens on the socket only.
            readinessProbe: {
              exec: { command: ['pg_isready', '-h', '127.0.0.1', '-U', 'sluice', '-d', 'sluice'] },
              periodSeconds: 2,
            },
            volumeMounts: [{ name: 'data', mountPath: '/var/lib/postgresql/data' }],
          },
        ],
        volumes: [{ name: 'data', emptyDir: {} }],
      },
    },
  },
};

function suite(): void {
  let k3s: StartedK3sContainer | undefined;
  let work: string;
  let kubeconfig: string;
  let helm: string;
  const kc = new KubeConfig();
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let custom: CustomObjectsApi;
  let gatewayUrl: string;
  const componentSelector = (component: string) => releaseComponent(RELEASE, component);
  const diagnostics = () => clusterDiagnostics(kc, [NS]);
  /** Polls until `probe` returns a value; on timeout fails with the last value and the diagnostics. */
  const until = <T>(what: string, probe: () => Promise<T | undefined>, ms: number) =>
    waitUntil(what, probe, ms, diagnostics);
  /** The REST API of the gateway, as a user's HTTP client calls it. */
  const api = restClient(() => gatewayUrl);

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'sluice-e2e-'));
    helm = await ensureHelm();

    // 1. k3s and the image, side by side (both take minutes).
    console.log(
      `e2e/k3s: Docker engine ${docker.ok ? docker.engine : ''}; starting ${K3S_IMAGE}, building ${IMAGE}`,
    );
    const [started, built] = await Promise.allSettled([
      new K3sContainer(K3S_IMAGE).withExposedPorts(NODE_PORT).start(),
      // Kept after the run (deleteOnExit: false) so the next build reuses its layers.
      GenericContainer.fromDockerfile(ROOT).build(IMAGE, { deleteOnExit: false }),
    ]);
    // Kept first, so afterAll stops k3s even when the build failed.
    if (started.status === 'fulfilled') k3s = started.value;
    for (const r of [started, built]) if (r.status === 'rejected') throw r.reason;
    if (!k3s) throw new Error('k3s did not start');
    const tar = join(work, 'sluice-image.tar');
    const client = await getContainerRuntimeClient();
    await pipe(await client.container.dockerode.getImage(IMAGE).get(), createWriteStream(tar));
    await k3s.copyFilesToContainer([{ source: tar, target: '/tmp/sluice-image.tar' }]);
    const imported = await k3s.exec([
      'k3s',
      'ctr',
      '--namespace',
      'k8s.io',
      'images',
      'import',
      '/tmp/sluice-image.tar',
    ]);
    if (imported.exitCode !== 0) throw new Error(`importing the image into k3s failed:\n${imported.output}`);
    rmSync(tar);

    kubeconfig = join(work, 'kubeconfig');
    writeFileSync(kubeconfig, k3s.getKubeConfig(), { mode: 0o600 });
    kc.loadFromFile(kubeconfig);
    core = kc.makeApiClient(CoreV1Api);
    apps = kc.makeApiClient(AppsV1Api);
    custom = kc.makeApiClient(CustomObjectsApi);

    // 2. PostgreSQL, then the chart.
    await core.createNamespace({ body: { metadata: { name: NS } } });
    await apps.createNamespacedDeployment({ namespace: NS, body: postgresDeployment });
    await core.createNamespacedService({
      namespace: NS,
      body: {
        metadata: { name: 'postgres', namespace: NS },
        spec: { selector: { app: 'postgres' }, ports: [{ port: 5432, targetPort: 'postgres' }] },
      },
    });
    await until(
      'PostgreSQL to be ready',
      async () =>
        (await apps.readNamespacedDeployment({ name: 'postgres', namespace: NS })).status?.readyReplicas
          ? true
          : undefined,
      5 * MINUTE,
    );

    const values = join(work, 'values.yaml');
    writeFileSync(
      values,
      JSON.stringify({
        // Never pull: the image exists only in k3s's containerd, imported above.
        image: { repository: IMAGE_REPOSITORY, tag: IMAGE_TAG, pullPolicy: 'Never' },
        postgresql: { url: POSTGRES_URL },
        gateway: { replicas: 1 },
      }),
    );
    const install = await run(helm, [
      'install', RELEASE, CHART, '--namespace', NS, '--kubeconfig', kubeconfig, '--values', values,
    ]); // prettier-ignore
    if (install.code !== 0) throw new Error(`helm install failed:\n${install.out}`);

    // The gateway through a NodePort of our own (the chart's Service is a
    // ClusterIP): same selector and target port as the chart's Service.
    const chartService = (
      await core.listNamespacedService({ namespace: NS, labelSelector: componentSelector('gateway') })
    ).items[0];
    if (!chartService) throw new Error(`helm install made no gateway Service\n${install.out}`);
    await core.createNamespacedService({
      namespace: NS,
      body: {
        metadata: { name: 'gateway-e2e', namespace: NS },
        spec: {
          type: 'NodePort',
          selector: chartService.spec!.selector,
          ports: [{ port: 80, targetPort: chartService.spec!.ports![0]!.targetPort, nodePort: NODE_PORT }],
        },
      },
    });
    gatewayUrl = `http://${k3s.getHost()}:${k3s.getMappedPort(NODE_PORT)}`;
  }, 45 * MINUTE);

  afterAll(async () => {
    await k3s?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  }, 5 * MINUTE);

  /** The chart's Deployment of a component, once all its replicas are Ready. */
  const readyDeployment = (component: string) =>
    until(
      `the ${component} Deployment to be Ready`,
      () => readyComponent(kc, NS, RELEASE, component),
      10 * MINUTE,
    );

  it(
    'the gateway and both operator replicas become Ready; one operator holds the Lease',
    async () => {
      const gateway = await readyDeployment('gateway');
      const operator = await readyDeployment('operator');
      expect(gateway.status?.readyReplicas).toBe(1);
      expect(operator.status?.readyReplicas).toBe(2);
      // The operator has no probes: Ready only says the process started. The
      // Lease says it is really running, and which replica leads.
      const pods = (
        await core.listNamespacedPod({ namespace: NS, labelSelector: componentSelector('operator') })
      ).items;
      const names = pods.map((p) => p.metadata!.name!);
      const leases = kc.makeApiClient(CoordinationV1Api);
      const holder = await until(
        'an operator replica to hold the Lease',
        async () => {
          const lease = await leases.readNamespacedLease({ name: operator.metadata!.name!, namespace: NS });
          const id = lease.spec?.holderIdentity;
          return id && names.includes(id) ? id : undefined;
        },
        3 * MINUTE,
      );
      expect(names).toContain(holder);
      // And the API answers through the Service.
      const ready = await until(
        'GET /api/readyz through the NodePort',
        async () => {
          const r = await api('GET', '/api/readyz');
          return r.status === 200 ? r : undefined;
        },
        3 * MINUTE,
      );
      expect(ready.status).toBe(200);
    },
    25 * MINUTE,
  );

  // Filled by the tests below, in order.
  let token = '';
  let pipelineId = '';
  const PASSWORD = 's3cret-pw-e2e';

  it('a user signs up, logs in, creates an environment, a team and the README pipeline (a draft)', async () => {
    const email = 'ana@example.com';
    const password = 'ana-password-1';
    const signup = await api('POST', '/api/auth/register', { json: { email, password } });
    expect([signup.status, signup.body?.email]).toEqual([201, email]);
    const login = await api('POST', '/api/auth/jwt/login', { form: { username: email, password } });
    expect(login.status).toBe(200);
    token = login.body.access_token as string;
    expect(token).toEqual(expect.any(String));
    const env = await api('POST', '/api/envs/', { token, json: { name: 'dev', description: 'Development' } });
    expect(env.status).toBe(201);
    const team = await api('POST', '/api/teams/', { token, json: { name: 'data-platform' } });
    expect(team.status).toBe(201);
    expect((await api('GET', '/api/users/me', { token })).body.email).toBe(email);

    // The README's first pipeline: a Kafka topic into a PostgreSQL table.
    const created = await api('POST', '/api/pipelines/', {
      token,
      json: {
        name: 'orders-to-dwh',
        team_id: team.body.id,
        source_name: 'orders-topic',
        source_type: 'KAFKA_SOURCE',
        source_config: { topic: 'orders', bootstrap_servers: 'kafka:9092' },
        target_name: 'dwh',
        target_type: 'POSTGRES_TARGET',
        target_config: { host: 'dwh.internal', database: 'analytics', user: 'loader', password: PASSWORD },
        subscription_target_table_name: 'orders',
        subscription_mapper_config: [
          { key: 'order_id', path: 'id', cast: 'int', primary_key: true },
          { key: 'customer', path: 'customer.email', hash_method: 'sha256' },
        ],
      },
    });
    expect([created.status, created.body]).toEqual([
      201,
      expect.objectContaining({ id: expect.any(String) }),
    ]);
    pipelineId = created.body.id as string;
    const read = await api('GET', `/api/pipelines/${pipelineId}`, { token });
    expect(read.body).toMatchObject({ name: 'orders-to-dwh', state: 'draft', version: 1 });
    expect(read.body.target_config.password).toBe('<redacted>');
  });

  it('the pipeline and its parts are custom resources; the password is in a Secret, not in them', async () => {
    const list = (plural: string): Promise<Any> =>
      custom.listNamespacedCustomObject({ group: 'sluice.dev', version: 'v1alpha1', namespace: NS, plural });
    const pipelines = (await list('pipelines')).items as Any[];
    expect(pipelines.map((p) => p.metadata.name)).toContain(pipelineId);
    const everything = [];
    for (const plural of ['connectors', 'datamodels', 'subscriptions', 'pipelines'])
      everything.push(...(await list(plural)).items);
    expect(everything.length).toBeGreaterThanOrEqual(5); // two connectors, a data model, a subscription, the pipeline
    expect(JSON.stringify(everything)).not.toContain(PASSWORD);
    // In the worker namespace (the chart's default `<release namespace>-workers`), none in the release one.
    const holders = async (namespace: string) =>
      (await core.listNamespacedSecret({ namespace })).items.filter((s) =>
        Object.values(s.data ?? {}).some((v) => Buffer.from(v, 'base64').toString() === PASSWORD),
      );
    expect(await holders(`${NS}-workers`)).toHaveLength(1);
    expect(await holders(NS)).toHaveLength(0);
  });

  it(
    'start: BUILDING, then error naming the broker no pod can reach, in the API and on the CR',
    async () => {
      const start = await api('POST', `/api/pipelines/${pipelineId}/start`, { token });
      expect([start.status, start.body]).toEqual([202, 'BUILDING']);

      // The operator starts the source worker as a Deployment of the image.
      // No broker runs in this cluster, so the worker cannot reach
      // `kafka:9092`; after the kubelet's restarts it is reported as failed,
      // naming the broker, and the mirror carries that to the REST API. With
      // Kafka and PostgreSQL run in the cluster, this is where `live` and the
      // rows arriving in the table would be asserted.
      const settled = await until(
        'the pipeline to leave building',
        async () => {
          const r = await api('GET', `/api/pipelines/${pipelineId}`, { token });
          return ['error', 'live'].includes(r.body?.state) ? r.body : undefined;
        },
        10 * MINUTE,
      );
      expect(settled.state).toBe('error');
      expect(settled.status_message).toContain('kafka:9092');

      // `kubectl get pipelines -n sluice`: the same request kubectl makes (a
      // Table, with the CRD's printer columns), and the object itself.
      const table: Any = await custom.listNamespacedCustomObject(
        { group: 'sluice.dev', version: 'v1alpha1', namespace: NS, plural: 'pipelines' },
        setHeaderOptions('Accept', 'application/json;as=Table;v=v1;g=meta.k8s.io,application/json'),
      );
      const columns = (table.columnDefinitions as { name: string }[]).map((c) => c.name);
      const row = (table.rows as { cells: unknown[]; object: Any }[]).find(
        (r) => r.object.metadata.name === pipelineId,
      );
      expect(row?.cells[columns.indexOf('State')]).toBe('error');
      expect(row?.cells[columns.indexOf('Ready')]).toBe('False');
      expect(row?.cells).toContain('orders-to-dwh');
      const cr: Any = await custom.getNamespacedCustomObject({
        group: 'sluice.dev',
        version: 'v1alpha1',
        namespace: NS,
        plural: 'pipelines',
        name: pipelineId,
      });
      expect(cr.status.state).toBe('error');
      expect(cr.status.message).toContain('kafka:9092');
      expect(cr.status.observedGeneration).toBe(cr.metadata.generation);
      expect(cr.status.conditions).toEqual(
        expect.arrayContaining([expect.objectContaining({ type: 'Ready', status: 'False' })]),
      );
    },
    15 * MINUTE,
  );

  it('no container of the gateway or the operator restarted', async () => {
    for (const component of ['gateway', 'operator']) {
      const pods = (
        await core.listNamespacedPod({ namespace: NS, labelSelector: componentSelector(component) })
      ).items;
      const restarts = pods.flatMap((p) =>
        (p.status?.containerStatuses ?? []).map((c) => `${p.metadata!.name}: ${c.restartCount}`),
      );
      expect(restarts.length).toBeGreaterThan(0);
      expect(restarts.filter((r) => !r.endsWith(': 0'))).toEqual([]);
    }
  });
}
