import { describe, it } from '@jest/globals';
import {
  fullClusterSuite,
  type ClusterUnderTest,
  type StartedCluster,
} from './support/full-cluster-suite.js';

// The full-cluster suite (e2e/support/full-cluster-suite.ts) on the test node
// of scripts/with-node.sh: a real kubelet with containerd and runc,
// kube-scheduler, kube-controller-manager and kube-proxy against their own API
// server, the images `make test` built imported into the node's containerd.
// Pods reach the host at the node's bridge address, where the Kafka broker has
// a listener (scripts/with-kafka.sh inside with-node.sh); the gateway is
// reached through its Service's cluster IP, from the host as a pod would.
//
// Without SLUICE_TEST_NODE_KUBECONFIG (no scripts/with-node.sh around the
// run) the file is skipped, saying why; SLUICE_REQUIRE_NODE=1 (make test)
// turns that into a failure. e2e/README.md describes it.

const env = process.env;
const missing = [
  !env.SLUICE_TEST_NODE_KUBECONFIG && 'SLUICE_TEST_NODE_KUBECONFIG (run under scripts/with-node.sh)',
  !env.SLUICE_TEST_NODE_NEXT_IMAGE &&
    'SLUICE_TEST_NODE_NEXT_IMAGE (scripts/image/build-next.sh before scripts/with-node.sh)',
  !env.SLUICE_TEST_KAFKA_NODE_BROKERS &&
    'SLUICE_TEST_KAFKA_NODE_BROKERS (scripts/with-kafka.sh inside scripts/with-node.sh)',
  !env.SLUICE_TEST_DATABASE_URL && 'SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)',
].filter(Boolean);

const node: ClusterUnderTest = {
  name: 'node',
  start: async (): Promise<StartedCluster> => {
    // The node's own API server: SIGSTOP cuts every client off, the kubelet's
    // containers keep running.
    const apiserver = Number(env.SLUICE_TEST_NODE_APISERVER_PID);
    if (!(apiserver > 0)) throw new Error('SLUICE_TEST_NODE_APISERVER_PID is not set');
    return {
      kubeconfig: env.SLUICE_TEST_NODE_KUBECONFIG!,
      kubectl: env.SLUICE_TEST_NODE_KUBECTL!,
      image: env.SLUICE_TEST_NODE_IMAGE!,
      nextImage: env.SLUICE_TEST_NODE_NEXT_IMAGE!,
      nextVersion: env.SLUICE_TEST_NODE_NEXT_VERSION!,
      hostIp: env.SLUICE_TEST_NODE_HOST_IP!,
      podBrokers: env.SLUICE_TEST_KAFKA_NODE_BROKERS!,
      hostBrokers: env.SLUICE_TEST_KAFKA_BROKERS!,
      // The chart's ClusterIP Service, reached from the node as any pod would (kube-proxy's rules).
      gatewayUrl: async (service) => `http://${service.spec!.clusterIP}:${service.spec!.ports![0]!.port}`,
      freezeApiServer: async () => void process.kill(apiserver, 'SIGSTOP'),
      thawApiServer: async () => void process.kill(apiserver, 'SIGCONT'),
    };
  },
  stop: async () => undefined,
};

const SUITE = 'e2e/node: the chart on a real node, pipelines through the REST API and as manifests';
if (missing.length === 0) describe(SUITE, () => fullClusterSuite(node));
else if (env.SLUICE_REQUIRE_NODE === '1')
  describe(SUITE, () =>
    it('needs the test node', () => {
      throw new Error(`SLUICE_REQUIRE_NODE=1 but ${missing.join(', ')} is not set`);
    }),
  );
else {
  console.warn(`e2e/node: skipped — ${missing.join(', ')} not set`);
  describe.skip(`${SUITE} (skipped: no test node)`, () => fullClusterSuite(node));
}
