import { ApiextensionsV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { RESOURCE_SCHEMAS } from '@sluice/shared/catalog';
import { KubernetesCluster } from '@sluice/shared/cluster';
import { SLUICE_KINDS, type ClusterObject } from '@sluice/shared/ports';
import { describeClusterContract } from '@sluice/testing/cluster-contract';
import { describeWithKube, startPrivateApiServer } from '@sluice/testing/kube';

// The Kubernetes adapter passes the same contract as the embedded one, on a
// real kube-apiserver + etcd. The contract writes free-form specs, so this
// file runs its own API server whose sluice.dev CRDs keep any spec (the real
// CRDs, with their schemas, are tested in operator/src/crds); the semantics
// under test (revisions, generation, status subresource, finalizers, watch)
// are the API server's own either way.
describeWithKube('Kubernetes cluster adapter', () => {
  describeClusterContract('kubernetes (kube-apiserver + etcd)', async () => {
    const server = await startPrivateApiServer();
    const kc = new KubeConfig();
    kc.loadFromFile(server.kubeconfig);
    await installOpenCrds(kc);
    const cluster = new KubernetesCluster({ kubeConfig: kc, fieldManager: 'contract-test' });
    // Objects live in namespaces, which must exist first in Kubernetes.
    const core = kc.makeApiClient(CoreV1Api);
    // One creation per namespace, which concurrent creates all wait for: a
    // test that writes 50 objects at once must not outrun its namespace.
    const made = new Map<string, Promise<unknown>>();
    const create = cluster.create.bind(cluster);
    cluster.create = async <T extends ClusterObject>(object: T): Promise<T> => {
      const ns = object.metadata.namespace;
      let ready = made.get(ns);
      if (ready === undefined) {
        ready = core.createNamespace({ body: { metadata: { name: ns } } });
        made.set(ns, ready);
      }
      await ready;
      return create(object);
    };
    return { cluster, teardown: () => server.stop() };
  });
});

async function installOpenCrds(kc: KubeConfig): Promise<void> {
  const api = kc.makeApiClient(ApiextensionsV1Api);
  // The generated client serializes by its model: its name for x-kubernetes-preserve-unknown-fields.
  const open = { type: 'object', x_kubernetes_preserve_unknown_fields: true };
  for (const kind of SLUICE_KINDS) {
    const plural = RESOURCE_SCHEMAS[kind].plural;
    await api.createCustomResourceDefinition({
      body: {
        metadata: { name: `${plural}.sluice.dev` },
        spec: {
          group: 'sluice.dev',
          scope: 'Namespaced',
          names: { kind, plural, singular: kind.toLowerCase(), listKind: `${kind}List` },
          versions: [
            {
              name: 'v1alpha1',
              served: true,
              storage: true,
              subresources: { status: {} },
              schema: { openAPIV3Schema: { type: 'object', properties: { spec: open, status: open } } },
            },
          ],
        },
      },
    });
  }
  for (const kind of SLUICE_KINDS) {
    const name = `${RESOURCE_SCHEMAS[kind].plural}.sluice.dev`;
    for (let i = 0; ; i++) {
      const crd = await api.readCustomResourceDefinition({ name });
      if (crd.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (i > 100) throw new Error(`${name} not established`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
