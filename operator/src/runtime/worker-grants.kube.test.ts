import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { AppsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { type ConnectorResource } from '@sluice/shared/catalog';
import { KubernetesCluster } from '@sluice/shared/cluster';
import { workerId, type WorkerSpec } from '@sluice/shared/ports';
import { KubernetesSecretStore, secretEnvName } from '@sluice/shared/secrets';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { silentLogger } from '../controller/logger.js';
import { DeploymentRuntime } from './deployment-runtime.js';
import { deploymentName, defaultPodTemplate } from './worker-deployment.js';
import { workerGrants } from './worker-grants.js';

// A worker pod is given only the secret references its team is granted
// (docs/security.md, "Secret references"): the operator's Deployment maps
// those to `secretKeyRef`s and leaves the others out, on the real API server.
// So a reference written before grants existed, or applied with kubectl, to
// an ungranted Secret, to the control plane's keys or to another object's
// managed Secret reaches no worker.

describeWithKube('secret grants of worker Deployments (real API server)', () => {
  const kc = new KubeConfig();
  const ns = `wg-${randomUUID().slice(0, 8)}`;
  const team = randomUUID();
  const env = randomUUID();
  const connectorId = randomUUID();
  let runtime: DeploymentRuntime;

  beforeAll(async () => {
    const kubeconfig = testKubeConfig() as string;
    kc.loadFromFile(kubeconfig);
    await installCrds(kubeconfig);
    const core = kc.makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: ns } } });
    const secret = (name: string, labels: Record<string, string>, annotations: Record<string, string>) =>
      core.createNamespacedSecret({
        namespace: ns,
        body: { metadata: { name, labels, annotations }, stringData: { v: 'x' } },
      });
    await secret('granted', {}, { 'sluice.dev/allowed-teams': team });
    await secret('env-granted', {}, { 'sluice.dev/allowed-envs': env });
    await secret('other-team', {}, { 'sluice.dev/allowed-teams': randomUUID() });
    await secret('ungranted', {}, {});
    await secret(
      'prod-sluice-keys',
      { 'sluice.dev/control-plane': 'true' },
      { 'sluice.dev/allowed-teams': team },
    );
    await secret(`sluice-connector-${connectorId}`, { 'sluice.dev/managed': 'true' }, {});
    await secret('sluice-connector-someone-else', { 'sluice.dev/managed': 'true' }, {});
    const cluster = new KubernetesCluster({ kubeConfig: kc, namespace: ns });
    await cluster.create<ConnectorResource>({
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Connector',
      metadata: { name: connectorId, namespace: ns },
      spec: {
        name: 'hook',
        teamId: team,
        connectorType: 'WEBHOOK_TARGET',
        configuration: { url: 'https://example.com/x' },
        desiredState: 'running',
      },
    });
    runtime = new DeploymentRuntime({
      kubeConfig: kc,
      namespace: ns,
      podTemplate: defaultPodTemplate('registry.example/sluice:0.1.0'),
      log: silentLogger,
      grantedRefs: workerGrants({
        secrets: new KubernetesSecretStore(kc),
        secretNamespace: ns,
        clusterFor: () => cluster,
      }),
    });
  }, 60_000);
  afterAll(async () => {
    await runtime?.close();
    await kc
      .makeApiClient(CoreV1Api)
      .deleteNamespace({ name: ns })
      .catch(() => undefined);
  });

  it('maps the granted references, its own managed Secret and no other', async () => {
    const ref = (name: string) => ({ valueFrom: { secretKeyRef: { name, key: 'v' } } });
    const names = [
      'granted',
      'env-granted',
      'other-team',
      'ungranted',
      'prod-sluice-keys',
      `sluice-connector-${connectorId}`,
      'sluice-connector-someone-else',
      'missing',
    ];
    const spec: WorkerSpec = {
      id: workerId(ns, connectorId),
      namespace: ns,
      config: {
        connector_id: connectorId,
        role: 'target',
        configuration: { headers: Object.fromEntries(names.map((n) => [n, ref(n)])) },
      },
      configHash: 'h1',
      labels: { 'sluice.dev/connector-id': connectorId },
    };
    await runtime.ensure(spec);
    const deployment = await kc
      .makeApiClient(AppsV1Api)
      .readNamespacedDeployment({ name: deploymentName(spec.id, ns), namespace: ns });
    const env = deployment.spec?.template.spec?.containers[0]?.env ?? [];
    const mapped = env
      .filter((e) => e.valueFrom?.secretKeyRef)
      .map((e) => e.valueFrom!.secretKeyRef!.name)
      .sort();
    expect(mapped).toEqual(['env-granted', 'granted', `sluice-connector-${connectorId}`].sort());
    // Each under the variable name the worker reads.
    expect(env.map((e) => e.name)).toContain(secretEnvName({ name: 'granted', key: 'v' }));
  });
});
