import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  CoordinationV1Api,
  KubeConfig,
  KubernetesObjectApi,
  loadAllYaml,
  type KubernetesObject,
} from '@kubernetes/client-node';
import {
  RESTART_ANNOTATION,
  STOP_ANNOTATION,
  type ConnectorResource,
  type PipelineResource,
} from '@sluice/shared/catalog';
import { KubernetesCluster } from '@sluice/shared/cluster';
import { describeWithKube } from '@sluice/testing/kube';
import { LeaderElector, LeaseConflictError, type LeaseRecord } from '../leader-election.js';
import { KubernetesLeaseStore } from '../lease-store-kubernetes.js';
import type { ProcessRuntime } from '../runtime/process-runtime.js';
import { Controller } from './controller.js';
import { KubernetesEventRecorder } from './kube-events.js';
import { silentLogger } from './logger.js';
import { EXAMPLE_TEAM, PIPELINE, SOURCE, TARGET } from '../../test/example-ids.js';
import { until } from '../../test/until.js';
import { scriptedRuntime, testNamespace } from '../../test/kube-test-bed.js';

// The operator as main.ts runs it (the controller under a Lease, one
// controller for every leadership term) against a real kube-apiserver: it
// loses the Lease to another holder (as when its renewals fail while the API
// server is frozen), leads again once that lease expires, and a pipeline
// started then runs its connectors: their effective state follows the
// pipeline and their workers start. Workers are local processes running the
// scripted stand-in.
const ROOT = resolve(import.meta.dirname, '../../..');
const EXAMPLE = join(ROOT, 'examples/kafka-to-kafka-pipeline.yaml');
const LEASE = 'sluice-operator';

describeWithKube('an operator that loses and regains its Lease', () => {
  const kc = new KubeConfig();
  const ns = `relead-${randomUUID().slice(0, 8)}`;
  const stop = new AbortController();
  const terms: Array<'leading' | 'no longer leading'> = [];
  let cluster: KubernetesCluster;
  let runtime: ProcessRuntime;
  let electing: Promise<void>;
  const leaseStore = () =>
    new KubernetesLeaseStore({ api: kc.makeApiClient(CoordinationV1Api), namespace: ns, name: LEASE });

  beforeAll(async () => {
    cluster = await testNamespace(kc, ns);
    runtime = scriptedRuntime('relead');
    const controller = new Controller({
      cluster,
      clusterFor: (namespace) => new KubernetesCluster({ kubeConfig: kc, namespace }),
      runtime,
      events: new KubernetesEventRecorder(kc, 'sluice-operator', silentLogger),
      log: silentLogger,
      namespaces: [ns],
      secretNamespace: ns,
      monitoringIntervalMs: 0,
    });
    const elector = new LeaderElector({
      store: leaseStore(),
      identity: 'op-b',
      leaseDurationMs: 2000,
      renewDeadlineMs: 1400,
      retryPeriodMs: 200,
      onStartedLeading: (signal) => {
        terms.push('leading');
        return controller.run(signal);
      },
      onStoppedLeading: () => terms.push('no longer leading'),
    });
    // As main.ts: a replica that loses the lease campaigns again.
    electing = (async () => {
      while (!stop.signal.aborted) await elector.run(stop.signal);
    })();
  }, 60_000);
  afterAll(async () => {
    stop.abort();
    await electing;
    await runtime?.close();
  });

  const connector = (name: string) => () => cluster.get<ConnectorResource>('Connector', ns, name);
  /** The workers up (starting or ready). */
  const workers = async () =>
    (await runtime.list())
      .filter((w) => w.phase === 'starting' || w.phase === 'ready')
      .map((w) => w.id)
      .sort();

  /** What POST /api/pipelines/{id}/start and /pause write (pipelines.service.ts). */
  async function call(what: 'start' | 'pause'): Promise<void> {
    await cluster.patch('Pipeline', ns, PIPELINE, {
      metadata: {
        annotations: { [what === 'start' ? RESTART_ANNOTATION : STOP_ANNOTATION]: new Date().toISOString() },
      },
      spec: { desiredState: what === 'start' ? 'running' : 'paused' },
    });
    await cluster.patchStatus('Pipeline', ns, PIPELINE, {
      state: what === 'start' ? 'building' : 'paused',
      message: null,
    });
  }

  /** Another replica takes the Lease (this one's renewals are refused) and holds it for 2 s. */
  async function stealLease(): Promise<void> {
    const store = leaseStore();
    // The leader renews every 200 ms: a write may lose the race with a renewal.
    for (let attempt = 0; ; attempt++) {
      const lease = (await store.get()) as LeaseRecord;
      const now = new Date().toISOString();
      try {
        await store.update({
          ...lease,
          holderIdentity: 'op-a',
          leaseDurationSeconds: 2,
          acquireTime: now,
          renewTime: now,
          leaseTransitions: lease.leaseTransitions + 1,
        });
        return;
      } catch (error) {
        if (!(error instanceof LeaseConflictError) || attempt >= 20) throw error;
      }
    }
  }

  it('a pipeline started after the operator led again runs its connectors and their workers', async () => {
    const api = KubernetesObjectApi.makeApiClient(kc);
    const text = readFileSync(EXAMPLE, 'utf8').replaceAll(EXAMPLE_TEAM, randomUUID());
    for (const doc of loadAllYaml(text) as KubernetesObject[]) {
      doc.metadata = { ...doc.metadata, namespace: ns };
      await api.create(doc);
    }
    // Started, then paused, in the first term.
    await until(connector(SOURCE), (c) => c?.status?.state === 'live');
    await call('pause');
    const paused = await until(connector(SOURCE), (c) => c?.status?.effectiveState === 'stopped');
    expect(paused?.status?.effectiveReason).toBe('Stopped with pipeline orders-copy (paused)');
    await until(workers, (w) => w.length === 0);

    await stealLease();
    await until(
      async () => terms.join(),
      (t) => t === 'leading,no longer leading,leading',
    );

    await call('start');
    for (const name of [SOURCE, TARGET]) {
      const c = await until(connector(name), (x) => x?.status?.state === 'live');
      expect(c?.status).toMatchObject({
        effectiveState: 'running',
        effectiveReason: 'Run by pipeline orders-copy',
      });
    }
    expect(await workers()).toEqual([`${ns}/${SOURCE}`, `${ns}/${TARGET}`].sort());
    const p = await until(
      () => cluster.get<PipelineResource>('Pipeline', ns, PIPELINE),
      (x) => x?.status?.state === 'live',
    );
    expect(p?.status?.state).toBe('live');
  }, 120_000);
});
