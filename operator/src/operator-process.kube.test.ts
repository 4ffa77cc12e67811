import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CoordinationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { type ConnectorResource } from '@sluice/shared/catalog';
import { KubernetesCluster } from '@sluice/shared/cluster';
import { describeWithKube, installCrds, testKubeConfig } from '@sluice/testing/kube';

// Two operator processes (the built `operator/dist/main.js`, as the chart
// runs them) against the real API server: one leads through the Lease; when
// it is killed (SIGKILL, in the middle of reconciling new objects) the other
// takes over within the lease duration and converges everything — nothing
// is lost. Workers are local processes running the scripted stand-in.
const ROOT = resolve(import.meta.dirname, '../..');
const FIXTURE = join(ROOT, 'testing/fixtures/scripted-worker.mjs');
const MAIN = join(ROOT, 'operator/dist/main.js');

describeWithKube('two operator processes with leader election', () => {
  const ns = `lead-${randomUUID().slice(0, 8)}`;
  const kc = new KubeConfig();
  const operators = new Map<string, ChildProcess>();
  let cluster: KubernetesCluster;

  function start(identity: string): void {
    const child = spawn(process.execPath, [MAIN], {
      env: {
        ...process.env,
        KUBECONFIG: testKubeConfig(),
        SLUICE_NAMESPACE: ns,
        POD_NAME: identity,
        SLUICE_WORKER_RUNTIME: 'process',
        SLUICE_WORKER_COMMAND: JSON.stringify([process.execPath, FIXTURE]),
        SLUICE_LEASE_DURATION_S: '3',
        SLUICE_DATA_DIR: mkdtempSync(join(tmpdir(), `sluice-${identity}-`)),
      },
      // Its own process group: killing it kills its workers too, as a pod's end would.
      detached: true,
      stdio: 'ignore',
    });
    operators.set(identity, child);
  }
  function kill(identity: string): Promise<void> {
    const child = operators.get(identity);
    if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    return exited;
  }

  beforeAll(async () => {
    kc.loadFromFile(testKubeConfig() as string);
    await installCrds(testKubeConfig() as string);
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
    cluster = new KubernetesCluster({ kubeConfig: kc, namespace: ns });
    start('op-a');
    start('op-b');
  });
  afterAll(async () => {
    await Promise.all([...operators.keys()].map((id) => kill(id)));
  });

  async function holder(): Promise<{ holderIdentity?: string; leaseTransitions?: number }> {
    const api = kc.makeApiClient(CoordinationV1Api);
    const lease = await api.readNamespacedLease({ name: 'sluice-operator', namespace: ns });
    return lease.spec ?? {};
  }
  const connector = (name: string): ConnectorResource => ({
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'Connector',
    metadata: { name, namespace: ns },
    spec: {
      name: `c-${name.slice(0, 8)}`,
      teamId: randomUUID(),
      connectorType: 'KAFKA_SOURCE',
      configuration: { topic: 'orders', script: 'slow:300' },
      desiredState: 'running',
    },
  });
  async function allLive(names: string[], ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    for (;;) {
      const states = await Promise.all(
        names.map(async (n) => (await cluster.get<ConnectorResource>('Connector', ns, n))?.status?.state),
      );
      if (states.every((s) => s === 'live')) return;
      if (Date.now() > deadline) throw new Error(`states: ${states.join(', ')}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  it('the leader reconciles; killed mid-reconcile, the other replica takes over and converges everything', async () => {
    const first = randomUUID();
    await cluster.create(connector(first));
    await allLive([first], 30_000);
    const leader = (await holder()).holderIdentity as string;
    expect(['op-a', 'op-b']).toContain(leader);
    const transitions = (await holder()).leaseTransitions ?? 0;

    const more = Array.from({ length: 5 }, () => randomUUID());
    await Promise.all(more.map((n) => cluster.create(connector(n))));
    await kill(leader);
    // Lease 3 s: the survivor leads within it (plus retries), relists, and converges all of them.
    await allLive([first, ...more], 30_000);
    const after = await holder();
    expect(after.holderIdentity).toBe(leader === 'op-a' ? 'op-b' : 'op-a');
    expect(after.leaseTransitions ?? 0).toBeGreaterThan(transitions);
  }, 90_000);
});
