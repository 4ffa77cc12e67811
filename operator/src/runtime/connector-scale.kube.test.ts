import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  PatchStrategy,
  loadYaml,
  setHeaderOptions,
  type V1CustomResourceDefinition,
  type V1PodTemplateSpec,
} from '@kubernetes/client-node';
import { workerId, type WorkerSpec } from '@sluice/shared/ports';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';
import { KubeletStandIn } from '@sluice/testing/kubelet-stand-in';
import { silentLogger } from '../controller/logger.js';
import { DeploymentRuntime } from './deployment-runtime.js';

// A Connector's scale subresource and a scaled worker Deployment on a real
// kube-apiserver: `kubectl scale connector/<id> --replicas=3` is a PATCH to
// connectors/<id>/scale, which sets spec.replicas; a source refuses it
// through the CRD's CEL rule; the scale reads back status.replicas and
// status.selector. Then the Deployment runtime gives a target's Deployment
// that count with a rolling update, and a new count changes no pod template.

const ROOT = resolve(import.meta.dirname, '../../..');
const GROUP = 'sluice.dev';
const VERSION = 'v1alpha1';
const MERGE_PATCH = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const TEMPLATE: V1PodTemplateSpec = {
  spec: { containers: [{ name: 'worker', image: 'registry.example/sluice:0.1.0' }] },
};

/* eslint-disable @typescript-eslint/no-explicit-any -- custom objects and API errors are plain data */
type Any = any;

describeWithKube('Connector scale subresource and scaled workers on a real API server', () => {
  const kc = new KubeConfig();
  const ns = `scale-${randomUUID().slice(0, 8)}`;
  let objects: CustomObjectsApi;
  let runtime: DeploymentRuntime;

  const connector = (type: string, replicas?: number) => ({
    apiVersion: `${GROUP}/${VERSION}`,
    kind: 'Connector',
    metadata: { name: randomUUID(), namespace: ns },
    spec: {
      name: `${type.toLowerCase()}-${randomUUID().slice(0, 6)}`,
      teamId: randomUUID(),
      connectorType: type,
      configuration: {},
      desiredState: 'running',
      ...(replicas !== undefined ? { replicas } : {}),
    },
  });
  const create = (body: Any) =>
    objects.createNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'connectors',
      body,
    });
  /** What `kubectl scale connector/<name> --replicas=<n>` sends. */
  const scale = (name: string, replicas: number) =>
    objects.patchNamespacedCustomObjectScale(
      {
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: 'connectors',
        name,
        body: { spec: { replicas } },
      },
      MERGE_PATCH,
    );
  const read = (name: string): Promise<Any> =>
    objects.getNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'connectors',
      name,
    });
  const refusal = (p: Promise<unknown>) =>
    p.then(
      () => undefined,
      (e: Any) => ({ code: e.code as number, message: String(JSON.parse(e.body ?? '{}').message ?? e.body) }),
    );

  beforeAll(async () => {
    const kubeconfig = testKubeConfig() as string;
    kc.loadFromFile(kubeconfig);
    await installCrds(kubeconfig);
    // The shared API server may hold the Connector CRD of an earlier run: this file needs the current one.
    const api = kc.makeApiClient(ApiextensionsV1Api);
    const crd = loadYaml<V1CustomResourceDefinition>(
      readFileSync(join(ROOT, 'crds', 'sluice.dev_connectors.yaml'), 'utf8'),
    );
    const current = await api.readCustomResourceDefinition({ name: 'connectors.sluice.dev' });
    await api.replaceCustomResourceDefinition({
      name: 'connectors.sluice.dev',
      body: { ...crd, metadata: { ...crd.metadata, resourceVersion: current.metadata?.resourceVersion } },
    });
    objects = kc.makeApiClient(CustomObjectsApi);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
    // Served once the new schema is: a scale of a fresh target answers.
    for (let i = 0; ; i++) {
      const probe = connector('KAFKA_TARGET');
      await create(probe);
      if ((await refusal(scale(probe.metadata.name, 2))) === undefined) break;
      if (i > 100) throw new Error('the scale subresource is not served');
      await new Promise((r) => setTimeout(r, 100));
    }
    runtime = new DeploymentRuntime({
      kubeConfig: kc,
      namespace: ns,
      podTemplate: TEMPLATE,
      log: silentLogger,
    });
  });
  afterAll(async () => {
    await runtime?.close();
    await kc
      .makeApiClient(CoreV1Api)
      .deleteNamespace({ name: ns })
      .catch(() => undefined);
  });

  it("kubectl scale sets a target's spec.replicas and reads back the ready workers and their selector", async () => {
    const c = connector('POSTGRES_TARGET');
    await create(c);
    await scale(c.metadata.name, 3);
    expect((await read(c.metadata.name)).spec.replicas).toBe(3);
    // What the operator writes: 2 of them ready, and their pods' label selector.
    const selector = `app.kubernetes.io/managed-by=sluice-operator,sluice.dev/connector-id=${c.metadata.name}`;
    await objects.patchNamespacedCustomObjectStatus(
      {
        group: GROUP,
        version: VERSION,
        namespace: ns,
        plural: 'connectors',
        name: c.metadata.name,
        body: { status: { replicas: 2, selector } },
      },
      MERGE_PATCH,
    );
    const got: Any = await objects.getNamespacedCustomObjectScale({
      group: GROUP,
      version: VERSION,
      namespace: ns,
      plural: 'connectors',
      name: c.metadata.name,
    });
    expect(got).toMatchObject({ kind: 'Scale', spec: { replicas: 3 }, status: { replicas: 2, selector } });
    await scale(c.metadata.name, 1);
    expect((await read(c.metadata.name)).spec.replicas).toBe(1);
  });

  it('refuses to scale a source past 1 (422 saying why), on the scale subresource and on the spec', async () => {
    const source = connector('POSTGRES_SOURCE');
    await create(source);
    const refused = await refusal(scale(source.metadata.name, 2));
    expect(refused?.code).toBe(422);
    expect(refused?.message).toContain('only target connectors take a replica count other than 1');
    expect((await read(source.metadata.name)).spec.replicas).toBeUndefined();
    expect(await refusal(scale(source.metadata.name, 1))).toBeUndefined();
    const created = await refusal(create(connector('MYSQL_SOURCE', 3)));
    expect(created?.code).toBe(422);
    expect(created?.message).toContain('a source has one reader');
  });

  it("gives a target's Deployment its replicas with a rolling update; a new count replaces no pod template", async () => {
    const kubelet = new KubeletStandIn(kc, ns);
    const spec = (replicas: number, scalesOut = true): WorkerSpec => ({
      id: workerId(ns, 'wh'),
      namespace: ns,
      config: { connector_id: 'wh', role: 'target' },
      configHash: 'h1',
      replicas,
      scalesOut,
      labels: { 'sluice.dev/connector-id': 'wh' },
    });
    await runtime.ensure(spec(3));
    const first = await kubelet.deployment('sluice-worker-wh');
    expect(first.spec?.replicas).toBe(3);
    expect(first.spec?.strategy).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: 1, maxUnavailable: 0 },
    });
    expect(first.spec?.template.metadata?.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'sluice-operator',
      'sluice.dev/connector-id': 'wh',
    });
    await runtime.ensure(spec(1));
    const scaled = await kubelet.deployment('sluice-worker-wh');
    expect(scaled.spec?.replicas).toBe(1);
    // The pod template is untouched, so the Deployment controller replaces no running pod.
    expect(scaled.spec?.template).toEqual(first.spec?.template);
    expect((await runtime.observe(workerId(ns, 'wh')))?.replicas).toBe(1);
    // A source: one pod, recreated (never two readers).
    await runtime.ensure({ ...spec(3, false), id: workerId(ns, 'src'), config: { role: 'source' } });
    const source = await kubelet.deployment('sluice-worker-src');
    expect(source.spec?.replicas).toBe(1);
    expect(source.spec?.strategy?.type).toBe('Recreate');
  });
});
