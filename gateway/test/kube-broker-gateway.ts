import { randomUUID } from 'node:crypto';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { Admin } from '@platformatic/kafka';
import { testKafkaBrokers } from '@sluice/testing/kafka';
import { installCrds, testKubeConfig } from '@sluice/testing/kube';
import { closeScanned } from './catalog-fixtures.js';
import { startTestGateway, type TestGateway } from './harness.js';

// What the tests of a source's platform-broker state on a real API server
// share: a gateway writing its custom resources to the test API server, in a
// namespace of its own, with the operator's control loop in its process;
// the platform broker (SLUICE_STREAM_BROKERS, which the gateway reads from
// its environment) and an admin client of it.

export interface KubeBrokerGateway {
  gw: TestGateway;
  namespace: string;
  brokers: string[];
  admin: Admin;
  /** Deletes `topics`, stops the gateway (scanning its logs for leaks), restores the environment. */
  close(topics: string[]): Promise<void>;
}

export async function startKubeBrokerGateway(
  prefix: string,
  env: Record<string, string> = {},
): Promise<KubeBrokerGateway> {
  const brokers = testKafkaBrokers();
  if (!brokers) throw new Error('needs SLUICE_TEST_KAFKA_BROKERS (scripts/with-kafka.sh)');
  const namespace = `${prefix}-${randomUUID().slice(0, 8)}`;
  const kubeconfig = testKubeConfig() as string;
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  await installCrds(kubeconfig);
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
  const saved = process.env.SLUICE_STREAM_BROKERS;
  process.env.SLUICE_STREAM_BROKERS = brokers.join(',');
  const admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
  const gw = await startTestGateway('pglite', {
    SLUICE_CLUSTER_ADAPTER: 'kubernetes',
    SLUICE_NAMESPACE: namespace,
    SLUICE_WATCH_NAMESPACES: namespace,
    KUBECONFIG: kubeconfig,
    SLUICE_EMBEDDED_OPERATOR: 'true',
    ...env,
  });
  return {
    gw,
    namespace,
    brokers,
    admin,
    async close(topics) {
      await admin.deleteTopics({ topics }).catch(() => undefined);
      await admin.close();
      try {
        await closeScanned(gw);
      } finally {
        if (saved === undefined) delete process.env.SLUICE_STREAM_BROKERS;
        else process.env.SLUICE_STREAM_BROKERS = saved;
      }
    },
  };
}
