import { describe, it } from '@jest/globals';
import { K3sContainer, type StartedK3sContainer } from '@testcontainers/k3s';
import { createWriteStream, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline as pipe } from 'node:stream/promises';
import { GenericContainer, getContainerRuntimeClient } from 'testcontainers';
import { ROOT, run } from './support/cluster.js';
import {
  fullClusterSuite,
  type ClusterUnderTest,
  type StartedCluster,
} from './support/full-cluster-suite.js';

// The full-cluster suite (e2e/support/full-cluster-suite.ts) on k3s in a
// container (@testcontainers/k3s), for machines with a Docker engine and
// Docker Hub (developer laptops, hosted CI): the same tests as on the test
// node of `make test`. `npm run test:e2e` runs it (scripts/e2e-k3s.sh):
//
//   - the image and the next release's image (a commit on top of this one,
//     scripts/image/next-release-tree.sh) built from the Dockerfile by the
//     Docker engine, `docker save`d and imported into k3s's containerd: no
//     registry involved;
//   - pods reach the host at the Docker bridge's gateway address, where the
//     test's Kafka broker has a listener (scripts/with-kafka.sh, started with
//     SLUICE_TEST_NODE_HOST_IP set to that address) and a relay forwards to
//     the test's PostgreSQL server;
//   - the gateway through a NodePort of the test's own, published by the k3s
//     container;
//   - the API server cut off by stopping the k3s server process (API server,
//     kubelet and flannel in one process; containerd and the pods go on), from
//     the host: the Docker engine must be local.
//
// Without a Docker engine (these development machines) the whole file is
// reported as SKIPPED with the reason — never as passed, and never failing
// `make test`, whose node suite runs the same tests. SLUICE_REQUIRE_DOCKER=1
// (`npm run test:e2e`) turns the skip into a failure. e2e/README.md.

const env = process.env;
// Kubernetes 1.37 as the test API server of `make test` (scripts/kube/versions.env).
const K3S_IMAGE = env.SLUICE_E2E_K3S_IMAGE || 'rancher/k3s:v1.37.1-k3s1';
const IMAGE = 'localhost/sluice:e2e';
const NEXT_IMAGE = 'localhost/sluice:e2e-next';
const NODE_PORT = 30080;

// Is there a Docker engine? testcontainers' own detection (DOCKER_HOST,
// ~/.testcontainers.properties, the Docker socket, rootless and Desktop
// sockets), decided when the file loads so the skip is visible in the report.
async function detectDocker(): Promise<{ ok: true; engine: string } | { ok: false; reason: string }> {
  const where = env.DOCKER_HOST
    ? `DOCKER_HOST=${env.DOCKER_HOST}`
    : `DOCKER_HOST unset, /var/run/docker.sock ${existsSync('/var/run/docker.sock') ? 'present' : 'absent'}`;
  try {
    const client = await getContainerRuntimeClient();
    const info = client.info.containerRuntime;
    return { ok: true, engine: `${info.host} (${info.operatingSystem}, ${info.architecture})` };
  } catch (e) {
    return { ok: false, reason: `${(e as Error).message}; ${where}` };
  }
}

let k3s: StartedK3sContainer | undefined;
let work = '';

const k3sCluster: ClusterUnderTest = {
  name: 'k3s',
  start: async (): Promise<StartedCluster> => {
    for (const name of [
      'SLUICE_TEST_NODE_HOST_IP',
      'SLUICE_TEST_KAFKA_NODE_BROKERS',
      'SLUICE_TEST_NODE_KUBECTL',
    ])
      if (!env[name])
        throw new Error(`${name} is not set: run the suite with npm run test:e2e (scripts/e2e-k3s.sh)`);
    work = mkdtempSync(join(tmpdir(), 'sluice-k3s-e2e-'));
    const next = await run('bash', [join(ROOT, 'scripts/image/next-release-tree.sh'), join(work, 'next')]);
    if (next.code !== 0) throw new Error(`next-release-tree.sh failed:\n${next.out}`);
    const nextVersion = next.out.trim().split('\n').pop()!;
    console.log(`e2e/k3s: starting ${K3S_IMAGE}, building ${IMAGE} and ${NEXT_IMAGE} (${nextVersion})`);
    const [started, ...built] = await Promise.allSettled([
      new K3sContainer(K3S_IMAGE).withExposedPorts(NODE_PORT).start(),
      // Kept after the run (deleteOnExit: false) so the next build reuses its layers.
      GenericContainer.fromDockerfile(ROOT).build(IMAGE, { deleteOnExit: false }),
      GenericContainer.fromDockerfile(join(work, 'next')).build(NEXT_IMAGE, { deleteOnExit: false }),
    ]);
    // Kept first, so stop() stops k3s even when a build failed.
    if (started.status === 'fulfilled') k3s = started.value;
    for (const r of [started, ...built]) if (r.status === 'rejected') throw r.reason;
    const client = await getContainerRuntimeClient();
    for (const image of [IMAGE, NEXT_IMAGE]) {
      const tar = join(work, 'image.tar');
      await pipe(await client.container.dockerode.getImage(image).get(), createWriteStream(tar));
      await k3s!.copyFilesToContainer([{ source: tar, target: '/tmp/image.tar' }]);
      const imported = await k3s!.exec([
        'k3s',
        'ctr',
        '--namespace',
        'k8s.io',
        'images',
        'import',
        '/tmp/image.tar',
      ]);
      if (imported.exitCode !== 0) throw new Error(`importing ${image} into k3s failed:\n${imported.output}`);
      rmSync(tar);
    }
    // Pods reach the host through the container's network gateway: the broker
    // and the relays must listen exactly there.
    const inspected = await client.container.dockerode.getContainer(k3s!.getId()).inspect();
    const gateways = Object.values(inspected.NetworkSettings.Networks).map((n) => n.Gateway);
    if (!gateways.includes(env.SLUICE_TEST_NODE_HOST_IP!))
      throw new Error(
        `pods reach the host at ${gateways.join(', ')}, but SLUICE_TEST_NODE_HOST_IP is ${env.SLUICE_TEST_NODE_HOST_IP}`,
      );
    const k3sPid = inspected.State.Pid;
    const kubeconfig = join(work, 'kubeconfig');
    writeFileSync(kubeconfig, k3s!.getKubeConfig(), { mode: 0o600 });
    return {
      kubeconfig,
      kubectl: env.SLUICE_TEST_NODE_KUBECTL!,
      image: IMAGE,
      nextImage: NEXT_IMAGE,
      nextVersion,
      hostIp: env.SLUICE_TEST_NODE_HOST_IP!,
      podBrokers: env.SLUICE_TEST_KAFKA_NODE_BROKERS!,
      hostBrokers: env.SLUICE_TEST_KAFKA_BROKERS!,
      // A NodePort of the test's own (the chart's Service is a ClusterIP): the
      // same selector and target port, published by the k3s container.
      gatewayUrl: async (service, core) => {
        await core.createNamespacedService({
          namespace: service.metadata!.namespace!,
          body: {
            metadata: { name: 'gateway-e2e', namespace: service.metadata!.namespace! },
            spec: {
              type: 'NodePort',
              selector: service.spec!.selector,
              ports: [{ port: 80, targetPort: service.spec!.ports![0]!.targetPort, nodePort: NODE_PORT }],
            },
          },
        });
        return `http://${k3s!.getHost()}:${k3s!.getMappedPort(NODE_PORT)}`;
      },
      freezeApiServer: async () => void process.kill(k3sPid, 'SIGSTOP'),
      thawApiServer: async () => void process.kill(k3sPid, 'SIGCONT'),
    };
  },
  stop: async () => {
    await k3s?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  },
};

const docker = await detectDocker();
const SUITE = 'e2e/k3s: the chart on k3s, pipelines through the REST API and as manifests';
if (docker.ok) {
  console.log(`e2e/k3s: Docker engine ${docker.engine}`);
  describe(SUITE, () => fullClusterSuite(k3sCluster));
} else if (env.SLUICE_REQUIRE_DOCKER === '1') {
  describe(SUITE, () => {
    it('needs a Docker engine', () => {
      throw new Error(`SLUICE_REQUIRE_DOCKER=1 but there is no Docker engine (${docker.reason})`);
    });
  });
} else {
  // A file whose tests are all skipped gets no per-test lines in jest's report.
  console.warn(`e2e/k3s: skipped — no Docker engine (${docker.reason})`);
  describe.skip(`${SUITE} (skipped: no Docker engine)`, () => fullClusterSuite(k3sCluster));
}
