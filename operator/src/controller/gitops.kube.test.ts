import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  loadAllYaml,
  PatchStrategy,
  type KubernetesObject,
} from '@kubernetes/client-node';
import {
  STOP_ANNOTATION,
  type ConnectorResource,
  type DataModelResource,
  type PipelineResource,
  type SubscriptionResource,
} from '@sluice/shared/catalog';
import type { KubernetesCluster } from '@sluice/shared/cluster';
import { SLUICE_KINDS, type ClusterObject, type WorkerRuntimePort } from '@sluice/shared/ports';
import { describeWithKube } from '@sluice/testing/kube';
import type { ProcessRuntime } from '../runtime/process-runtime.js';
import { EXAMPLE_TEAM, PIPELINE, SOURCE, TARGET, DATAMODEL, SUBSCRIPTION } from '../../test/example-ids.js';
import { until } from '../../test/until.js';
import { startController } from '../../test/start-controller.js';
import { scriptedRuntime, testNamespace } from '../../test/kube-test-bed.js';

// GitOps on a real kube-apiserver: every manifest of examples/ applied as
// Argo CD or Flux apply it (server-side apply, forced, as the same field
// manager every time), with the operator running. After convergence,
// re-applying them changes nothing: the operator never writes a spec, so no
// generation or resourceVersion moves and no worker restarts. A stop of a
// pipeline's connector sticks, and a connector deleted with kubectl takes
// its data models with it (no garbage collector runs beside this API server:
// the operator's finalizer does it; their ownerReferences let the collector
// do it on a real cluster).
const ROOT = resolve(import.meta.dirname, '../../..');
const EXAMPLES = join(ROOT, 'examples');

describeWithKube('examples/ under GitOps on a real API server', () => {
  const kc = new KubeConfig();
  const ns = `gitops-${randomUUID().slice(0, 8)}`;
  const team = randomUUID();
  let cluster: KubernetesCluster;
  let stopOperator: () => Promise<void>;
  let runtime: ProcessRuntime;
  /** Every worker the operator started (or restarted with a new configuration). */
  const starts: string[] = [];

  beforeAll(async () => {
    cluster = await testNamespace(kc, ns);
    runtime = scriptedRuntime('gitops');
    const counting = new Proxy(runtime, {
      get(target, key) {
        if (key === 'ensure') {
          return (spec: Parameters<WorkerRuntimePort['ensure']>[0]) => {
            starts.push(spec.id);
            return target.ensure(spec);
          };
        }
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    // The monitoring collector's figures are status too; this test is about specs and workers.
    stopOperator = startController(kc, cluster, counting, ns, { monitoringIntervalMs: 0 });
  }, 60_000);
  afterAll(async () => {
    await stopOperator?.();
    await runtime?.close();
  });

  /** Every manifest of examples/, as `kubectl apply --server-side --force-conflicts` sends it. */
  async function applyExamples(): Promise<void> {
    const api = KubernetesObjectApi.makeApiClient(kc);
    for (const file of readdirSync(EXAMPLES).filter((f) => f.endsWith('.yaml'))) {
      const text = readFileSync(join(EXAMPLES, file), 'utf8').replaceAll(EXAMPLE_TEAM, team);
      // Sluice's own kinds: the KEDA example needs KEDA's CRDs, which this API server does not have.
      const own = (loadAllYaml(text) as KubernetesObject[]).filter((d) =>
        d.apiVersion?.startsWith('sluice.dev/'),
      );
      for (const doc of own) {
        doc.metadata = { ...doc.metadata, namespace: ns };
        await api.patch(doc, undefined, undefined, 'argocd-controller', true, PatchStrategy.ServerSideApply);
      }
    }
  }

  /** generation/resourceVersion of every object in the namespace. */
  async function versions(): Promise<Record<string, string>> {
    const out: Record<string, string> = {};
    for (const kind of SLUICE_KINDS) {
      for (const o of (await cluster.list(kind, ns)).items) {
        out[`${kind}/${o.metadata.name}`] = `${o.metadata.generation}/${o.metadata.resourceVersion}`;
      }
    }
    const secrets = await kc.makeApiClient(CoreV1Api).listNamespacedSecret({ namespace: ns });
    for (const s of secrets.items) out[`Secret/${s.metadata?.name}`] = `-/${s.metadata?.resourceVersion}`;
    return out;
  }

  const get =
    <T extends ClusterObject>(kind: T['kind'], name: string) =>
    () =>
      cluster.get<T>(kind, ns, name);
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  /** Waits until nothing in the namespace changed for `quietMs`. */
  async function settled(quietMs = 3000): Promise<Record<string, string>> {
    let before = await versions();
    for (let i = 0; i < 20; i++) {
      await sleep(quietMs);
      const now = await versions();
      if (JSON.stringify(now) === JSON.stringify(before)) return now;
      before = now;
    }
    throw new Error('the namespace never settled');
  }

  it('re-applying the examples three times changes nothing: no generation, no resourceVersion, no worker restart', async () => {
    await applyExamples();
    // The pipeline runs its connectors and its subscription although they declare stopped / disabled.
    await until(get<PipelineResource>('Pipeline', PIPELINE), (p) => p?.status?.state === 'live');
    const source = await until(
      get<ConnectorResource>('Connector', SOURCE),
      (c) => c?.status?.state === 'live',
    );
    expect(source?.status).toMatchObject({
      effectiveState: 'running',
      effectiveReason: 'Run by pipeline orders-copy',
    });
    const sub = await until(
      get<SubscriptionResource>('Subscription', SUBSCRIPTION),
      (s) => s?.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True',
    );
    expect(sub?.status).toMatchObject({
      effectiveState: 'enabled',
      effectiveReason: 'Enabled by pipeline orders-copy',
    });
    const converged = await settled();
    const started = starts.length;
    expect(started).toBe(2); // the source and the target, once each

    for (let i = 0; i < 3; i++) {
      await applyExamples();
      await sleep(1500);
    }
    await sleep(3000);
    const after = await versions();
    // What changed, with its status, says who wrote it when this fails.
    const changed = Object.keys(after).filter((k) => after[k] !== converged[k]);
    const statuses = await Promise.all(
      changed
        .filter((k) => !k.startsWith('Secret/'))
        .map(async (k) => {
          const [kind, name] = k.split('/') as [ClusterObject['kind'], string];
          return `${k}: ${JSON.stringify((await cluster.get(kind, ns, name))?.status)}`;
        }),
    );
    expect({ versions: after, statuses }).toEqual({ versions: converged, statuses: [] });
    expect(starts.length).toBe(started);
    // What was applied is what is there (`kubectl diff` reports nothing).
    expect((await cluster.get<ConnectorResource>('Connector', ns, SOURCE))?.spec.desiredState).toBe(
      'stopped',
    );
    expect((await cluster.get<SubscriptionResource>('Subscription', ns, SUBSCRIPTION))?.spec.enabled).toBe(
      false,
    );
  }, 180_000);

  it("a stop of a running pipeline's connector sticks (as POST /connectors/{id}/stop writes it)", async () => {
    await cluster.patch('Connector', ns, TARGET, {
      metadata: { annotations: { [STOP_ANNOTATION]: new Date().toISOString() } },
      spec: { desiredState: 'stopped' },
    });
    await until(get<ConnectorResource>('Connector', TARGET), (c) => c?.status?.state === 'paused');
    for (let i = 0; i < 10; i++) {
      await sleep(300);
      const c = await cluster.get<ConnectorResource>('Connector', ns, TARGET);
      expect(c?.status).toMatchObject({ state: 'paused', effectiveState: 'stopped' });
    }
    const p = await until(get<PipelineResource>('Pipeline', PIPELINE), (x) => x?.status?.state === 'error');
    expect(p?.status?.message).toBe(
      'Target orders-out was stopped after the pipeline started: start it, or start the pipeline again',
    );
  }, 60_000);

  it('a connector deleted with kubectl takes its data models with it (ownerReferences, and the finalizer)', async () => {
    const source = await cluster.get<ConnectorResource>('Connector', ns, SOURCE);
    const dm = await until(get<DataModelResource>('DataModel', DATAMODEL), (d) =>
      Boolean(d?.metadata.ownerReferences),
    );
    expect(dm?.metadata.ownerReferences).toEqual([
      { apiVersion: 'sluice.dev/v1alpha1', kind: 'Connector', name: SOURCE, uid: source?.metadata.uid },
    ]);
    await cluster.delete('Connector', ns, SOURCE);
    await until(get<ConnectorResource>('Connector', SOURCE), (c) => c === undefined);
    await until(get<DataModelResource>('DataModel', DATAMODEL), (d) => d === undefined);
  }, 60_000);
});
