import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { describeWithKube, testKubeConfig } from '@sluice/testing/kube';

// The API server that scripts/with-kube.sh starts (docs/testing-kubernetes.md):
// the core API, RBAC-authorized requests with the admin token, and
// CustomResourceDefinitions, which the operator's resources are.
describeWithKube('kube-apiserver under scripts/with-kube.sh', () => {
  const suffix = randomUUID().slice(0, 8);
  const namespace = `sluice-test-${suffix}`;
  // A group of its own per run, so runs against a shared server never collide.
  const group = `t${suffix}.sluice.test`;
  const plural = 'widgets';
  const crdName = `${plural}.${group}`;

  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;

  beforeAll(() => {
    kc = new k8s.KubeConfig();
    kc.loadFromFile(testKubeConfig() as string);
    core = kc.makeApiClient(k8s.CoreV1Api);
  });

  afterAll(async () => {
    if (!kc) return;
    // Best effort: without a controller-manager a deleted namespace stays
    // Terminating, but it no longer shows among active ones.
    await kc
      .makeApiClient(k8s.ApiextensionsV1Api)
      .deleteCustomResourceDefinition({ name: crdName })
      .catch(() => undefined);
    await core.deleteNamespace({ name: namespace }).catch(() => undefined);
  });

  it('lists namespaces and sees default', async () => {
    const list = await core.listNamespace();
    expect(list.items.map((ns) => ns.metadata?.name)).toContain('default');
  });

  it('creates and reads a ConfigMap in a fresh namespace', async () => {
    await core.createNamespace({ body: { metadata: { name: namespace } } });
    await core.createNamespacedConfigMap({
      namespace,
      body: { metadata: { name: 'settings' }, data: { mode: 'test' } },
    });
    const read = await core.readNamespacedConfigMap({ namespace, name: 'settings' });
    expect(read.data).toEqual({ mode: 'test' });
    expect(read.metadata?.uid).toBeTruthy();
  });

  it('enforces RBAC: a Role lets an impersonated user read ConfigMaps but not create them', async () => {
    await core.createNamespace({ body: { metadata: { name: namespace } } }).catch((err: unknown) => {
      if (!(err instanceof k8s.ApiException && err.code === 409)) throw err;
    });
    await core
      .createNamespacedConfigMap({
        namespace,
        body: { metadata: { name: 'settings' }, data: { mode: 'test' } },
      })
      .catch((err: unknown) => {
        if (!(err instanceof k8s.ApiException && err.code === 409)) throw err;
      });
    const rbac = kc.makeApiClient(k8s.RbacAuthorizationV1Api);
    await rbac.createNamespacedRole({
      namespace,
      body: {
        metadata: { name: 'configmap-reader' },
        rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['get', 'list'] }],
      },
    });
    await rbac.createNamespacedRoleBinding({
      namespace,
      body: {
        metadata: { name: 'configmap-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmap-reader' },
        subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'sluice-test-reader' }],
      },
    });

    const cluster = kc.getCurrentCluster() as k8s.Cluster;
    const admin = kc.getCurrentUser() as k8s.User;
    const reader = new k8s.KubeConfig();
    reader.loadFromOptions({
      clusters: [cluster],
      users: [{ ...admin, name: 'reader', impersonateUser: 'sluice-test-reader' }],
      contexts: [{ name: 'reader', cluster: cluster.name, user: 'reader' }],
      currentContext: 'reader',
    });
    const readerCore = reader.makeApiClient(k8s.CoreV1Api);

    // The authorizer sees new bindings through a watch: allow it a moment.
    for (let attempt = 0; ; attempt++) {
      try {
        const read = await readerCore.readNamespacedConfigMap({ namespace, name: 'settings' });
        expect(read.data).toEqual({ mode: 'test' });
        break;
      } catch (err) {
        if (!(err instanceof k8s.ApiException && err.code === 403) || attempt >= 50) throw err;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    await expect(
      readerCore.createNamespacedConfigMap({ namespace, body: { metadata: { name: 'denied' } } }),
    ).rejects.toMatchObject({ code: 403 });
    await expect(readerCore.listNamespacedSecret({ namespace })).rejects.toMatchObject({ code: 403 });
  });

  it('creates a CustomResourceDefinition, waits until Established, and creates an object of it', async () => {
    const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
    await ext.createCustomResourceDefinition({
      body: {
        metadata: { name: crdName },
        spec: {
          group,
          scope: 'Namespaced',
          names: { plural, singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
          versions: [
            {
              name: 'v1',
              served: true,
              storage: true,
              schema: {
                openAPIV3Schema: {
                  type: 'object',
                  properties: {
                    spec: { type: 'object', properties: { size: { type: 'integer' } } },
                  },
                },
              },
            },
          ],
        },
      },
    });

    const deadline = Date.now() + 20_000;
    for (;;) {
      const crd = await ext.readCustomResourceDefinition({ name: crdName });
      const established = crd.status?.conditions?.find((c) => c.type === 'Established');
      if (established?.status === 'True') break;
      if (Date.now() > deadline) throw new Error(`CRD ${crdName} not Established after 20s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }

    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    await core.createNamespace({ body: { metadata: { name: namespace } } }).catch((err: unknown) => {
      if (!(err instanceof k8s.ApiException && err.code === 409)) throw err;
    });
    const body = {
      apiVersion: `${group}/v1`,
      kind: 'Widget',
      metadata: { name: 'first', namespace },
      spec: { size: 3 },
    };
    // Established means served; the handler may still need a moment to route.
    for (let attempt = 0; ; attempt++) {
      try {
        await custom.createNamespacedCustomObject({ group, version: 'v1', namespace, plural, body });
        break;
      } catch (err) {
        if (!(err instanceof k8s.ApiException && err.code === 404) || attempt >= 50) throw err;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    const read = (await custom.getNamespacedCustomObject({
      group,
      version: 'v1',
      namespace,
      plural,
      name: 'first',
    })) as { spec?: { size?: number }; metadata?: { uid?: string } };
    expect(read.spec).toEqual({ size: 3 });
    expect(read.metadata?.uid).toBeTruthy();
  });
});
