import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import * as k8s from '@kubernetes/client-node';
import { describeWithKube, testKubeConfig } from '@sluice/testing/kube';
import { LeaderElector, LeaseConflictError, type LeaseRecord } from './leader-election.js';
import {
  fromMicroTime,
  KubernetesLeaseStore,
  leaseToRecord,
  toMicroTime,
  type LeaseApi,
} from './lease-store-kubernetes.js';

/** Polls `condition` with real time; resolves how long it took. */
async function waitFor(condition: () => boolean, timeoutMs: number): Promise<number> {
  const start = Date.now();
  while (!condition()) {
    if (Date.now() - start > timeoutMs) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return Date.now() - start;
}

function apiError(code: number, reason: string, message: string): k8s.ApiException<string> {
  return new k8s.ApiException(code, message, JSON.stringify({ kind: 'Status', reason, message, code }), {});
}

// The mapping to and from Lease objects, against a stand-in for the API: runs
// everywhere, where the block below needs an API server.
describe('KubernetesLeaseStore (stand-in API)', () => {
  const calls: Array<{ op: string; body?: k8s.V1Lease }> = [];
  let next: () => Promise<k8s.V1Lease> = () => Promise.reject(new Error('unset'));
  const api: LeaseApi = {
    readNamespacedLease: async () => {
      calls.push({ op: 'read' });
      return next();
    },
    createNamespacedLease: async ({ body }) => {
      calls.push({ op: 'create', body });
      return next();
    },
    replaceNamespacedLease: async ({ body }) => {
      calls.push({ op: 'replace', body });
      return next();
    },
  };
  const store = new KubernetesLeaseStore({ api, namespace: 'ns', name: 'op', labels: { app: 'sluice' } });
  const record: LeaseRecord = {
    holderIdentity: 'a',
    leaseDurationSeconds: 15,
    acquireTime: '2030-01-01T00:00:00.123Z',
    renewTime: '2030-01-01T00:00:05.456Z',
    leaseTransitions: 2,
    resourceVersion: '41',
  };

  it('reads a missing Lease as undefined and passes other errors on', async () => {
    next = () => Promise.reject(apiError(404, 'NotFound', 'leases "op" not found'));
    await expect(store.get()).resolves.toBeUndefined();
    next = () => Promise.reject(apiError(403, 'Forbidden', 'no'));
    await expect(store.get()).rejects.toBeInstanceOf(k8s.ApiException);
  });

  it('reads the API server’s microsecond strings (client-node does not revive them) as millisecond ISO strings', async () => {
    next = async () => ({
      metadata: { name: 'op', resourceVersion: '7' },
      spec: {
        holderIdentity: 'b',
        leaseDurationSeconds: 3,
        // What client-node 2.x really hands back: the JSON string, typed as V1MicroTime.
        acquireTime: '2030-01-01T00:00:00.123456Z' as unknown as k8s.V1MicroTime,
        renewTime: new Date('2030-01-01T00:00:01.5Z'),
        leaseTransitions: 4,
      },
    });
    expect(await store.get()).toEqual({
      holderIdentity: 'b',
      leaseDurationSeconds: 3,
      acquireTime: '2030-01-01T00:00:00.123Z',
      renewTime: '2030-01-01T00:00:01.500Z',
      leaseTransitions: 4,
      resourceVersion: '7',
    });
  });

  it('creates the Lease with V1MicroTime timestamps, its labels, and no resourceVersion', async () => {
    calls.length = 0;
    next = async () => calls[0]?.body as k8s.V1Lease;
    await store.create(record);
    const body = calls[0]?.body as k8s.V1Lease;
    expect(calls[0]?.op).toBe('create');
    expect(body.metadata).toEqual({ name: 'op', namespace: 'ns', labels: { app: 'sluice' } });
    expect(body.spec?.acquireTime).toBeInstanceOf(k8s.V1MicroTime);
    // Exactly six fractional digits, as the API server's MicroTime requires.
    expect(JSON.parse(JSON.stringify(body.spec))).toEqual({
      holderIdentity: 'a',
      leaseDurationSeconds: 15,
      acquireTime: '2030-01-01T00:00:00.123000Z',
      renewTime: '2030-01-01T00:00:05.456000Z',
      leaseTransitions: 2,
    });
  });

  it('replaces the Lease from the given resourceVersion', async () => {
    calls.length = 0;
    next = async () => calls[0]?.body as k8s.V1Lease;
    const written = await store.update({ ...record, holderIdentity: undefined });
    expect(calls[0]?.op).toBe('replace');
    expect(calls[0]?.body?.metadata?.resourceVersion).toBe('41');
    expect(calls[0]?.body?.spec?.holderIdentity).toBeUndefined();
    expect(written).toEqual({ ...record, holderIdentity: undefined });
  });

  it('maps 409 and 404 to LeaseConflictError', async () => {
    next = () => Promise.reject(apiError(409, 'AlreadyExists', 'leases "op" already exists'));
    const exists = await store.create(record).catch((e: unknown) => e);
    expect(exists).toBeInstanceOf(LeaseConflictError);
    expect((exists as LeaseConflictError).reason).toBe('already-exists');
    expect((exists as LeaseConflictError).message).toContain('already exists');

    next = () => Promise.reject(apiError(409, 'Conflict', 'the object has been modified'));
    expect(((await store.update(record).catch((e: unknown) => e)) as LeaseConflictError).reason).toBe(
      'conflict',
    );
    next = () => Promise.reject(apiError(404, 'NotFound', 'gone'));
    expect(((await store.update(record).catch((e: unknown) => e)) as LeaseConflictError).reason).toBe(
      'not-found',
    );
    next = () => Promise.reject(apiError(500, 'InternalError', 'etcd down'));
    await expect(store.update(record)).rejects.toBeInstanceOf(k8s.ApiException);
  });

  it('converts timestamps carefully', () => {
    expect(toMicroTime(undefined)).toBeUndefined();
    expect(toMicroTime('2030-01-01T00:00:00Z')?.toISOString()).toBe('2030-01-01T00:00:00.000000Z');
    expect(() => toMicroTime('yesterday')).toThrow(RangeError);
    expect(fromMicroTime(undefined)).toBeUndefined();
    expect(fromMicroTime(null)).toBeUndefined();
    expect(fromMicroTime(new k8s.V1MicroTime('2030-01-01T00:00:00.25Z'))).toBe('2030-01-01T00:00:00.250Z');
    expect(fromMicroTime('2030-01-01T01:00:00.999999+01:00')).toBe('2030-01-01T00:00:00.999Z');
    expect(leaseToRecord({ metadata: { name: 'x' } })).toEqual({
      holderIdentity: undefined,
      leaseDurationSeconds: 0,
      acquireTime: undefined,
      renewTime: undefined,
      leaseTransitions: 0,
      resourceVersion: undefined,
    });
  });
});

// Two electors on one Lease in a real kube-apiserver (scripts/with-kube.sh).
describeWithKube('leader election on a Lease in a real API server', () => {
  const namespace = `sluice-le-${randomUUID().slice(0, 8)}`;
  const leaseName = 'sluice-operator';
  const timings = { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 };
  // The longest gap between two acquire attempts (retry period plus client-go's jitter).
  const maxRetryWait = 500 * 2.2;

  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let coordination: k8s.CoordinationV1Api;
  const stops: Array<() => Promise<void>> = [];

  function elector(identity: string, releaseOnCancel: boolean) {
    const events: string[] = [];
    const errors: unknown[] = [];
    let leaderSignal: AbortSignal | undefined;
    const e = new LeaderElector({
      store: new KubernetesLeaseStore({ api: coordination, namespace, name: leaseName }),
      identity,
      ...timings,
      releaseOnCancel,
      onStartedLeading: (signal) => {
        events.push('started');
        leaderSignal = signal;
      },
      onStoppedLeading: () => events.push('stopped'),
      onNewLeader: (id) => events.push(`leader:${id}`),
      onError: (error) => errors.push(error),
    });
    const controller = new AbortController();
    const running = e.run(controller.signal);
    const stop = async (): Promise<void> => {
      controller.abort();
      await running;
    };
    stops.push(stop);
    return { e, events, errors, stop, leaderSignal: () => leaderSignal };
  }

  beforeAll(async () => {
    kc = new k8s.KubeConfig();
    kc.loadFromFile(testKubeConfig() as string);
    core = kc.makeApiClient(k8s.CoreV1Api);
    coordination = kc.makeApiClient(k8s.CoordinationV1Api);
    await core.createNamespace({ body: { metadata: { name: namespace } } });
  });

  afterAll(async () => {
    await Promise.all(stops.map((stop) => stop()));
    // Without a controller-manager the namespace stays Terminating; best effort.
    await core?.deleteNamespace({ name: namespace }).catch(() => undefined);
  });

  it('stores a Lease with the API server’s conflict semantics', async () => {
    const store = new KubernetesLeaseStore({ api: coordination, namespace, name: 'store-check' });
    expect(await store.get()).toBeUndefined();
    const created = await store.create({
      holderIdentity: 'x',
      leaseDurationSeconds: 5,
      acquireTime: '2030-01-01T00:00:00.123Z',
      renewTime: '2030-01-01T00:00:00.123Z',
      leaseTransitions: 0,
    });
    expect(created).toMatchObject({ holderIdentity: 'x', renewTime: '2030-01-01T00:00:00.123Z' });
    expect(created.resourceVersion).toBeTruthy();
    expect(await store.get()).toEqual(created);

    const again = await store.create(created).catch((e: unknown) => e);
    expect((again as LeaseConflictError).reason).toBe('already-exists');

    const updated = await store.update({ ...created, holderIdentity: 'y', leaseTransitions: 1 });
    expect(updated.resourceVersion).not.toBe(created.resourceVersion);
    const stale = await store.update({ ...created, holderIdentity: 'z' }).catch((e: unknown) => e);
    expect((stale as LeaseConflictError).reason).toBe('conflict');

    // Leases allow create-on-update: replacing one that is gone creates it
    // (MemoryLeaseStore does the same).
    const missing = new KubernetesLeaseStore({ api: coordination, namespace, name: 'recreated' });
    expect(await missing.get()).toBeUndefined();
    const recreated = await missing.update({ ...updated, holderIdentity: 'w' });
    expect(await missing.get()).toEqual(recreated);

    // A 404 from elsewhere, here a namespace that does not exist, maps to 'not-found'.
    const nowhere = new KubernetesLeaseStore({
      api: coordination,
      namespace: `${namespace}-absent`,
      name: 'x',
    });
    expect(await nowhere.get()).toBeUndefined();
    const gone = await nowhere.update(created).catch((e: unknown) => e);
    expect(gone).toBeInstanceOf(LeaseConflictError);
    expect((gone as LeaseConflictError).reason).toBe('not-found');
  });

  it('fails over to the second elector when the leader stops without releasing', async () => {
    const a = elector('replica-a', false);
    await waitFor(() => a.e.isLeader(), 5_000);
    const b = elector('replica-b', true);
    // b sees a lead and waits.
    await waitFor(() => b.events.includes('leader:replica-a'), 5_000);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(b.e.isLeader()).toBe(false);
    expect(a.e.isLeader()).toBe(true);

    const before = await coordination.readNamespacedLease({ name: leaseName, namespace });
    expect(before.spec?.holderIdentity).toBe('replica-a');
    expect(before.spec?.leaseDurationSeconds).toBe(3);
    const transitionsBefore = before.spec?.leaseTransitions ?? 0;

    // A crash, as far as the lease is concerned: no more renewals, no release.
    await a.stop();
    expect(a.events).toEqual(['leader:replica-a', 'started', 'stopped']);
    expect(a.leaderSignal()?.aborted).toBe(true);
    const took = await waitFor(() => b.e.isLeader(), timings.leaseDurationMs + 2 * maxRetryWait + 3_000);
    // Not before the lease could have expired: a renewed at most a retry period before it stopped.
    expect(took).toBeGreaterThanOrEqual(timings.leaseDurationMs - timings.retryPeriodMs - 100);
    // b sees a's last renewal within one polling gap, and takes over within one more after it
    // expires; a second is allowed for API latency on a loaded machine.
    expect(took).toBeLessThanOrEqual(timings.leaseDurationMs + 2 * maxRetryWait + 1_000);
    expect(b.events).toEqual(['leader:replica-a', 'leader:replica-b', 'started']);

    const after = await coordination.readNamespacedLease({ name: leaseName, namespace });
    expect(after.spec?.holderIdentity).toBe('replica-b');
    expect(after.spec?.leaseTransitions).toBe(transitionsBefore + 1);
    expect(Date.parse(String(after.spec?.acquireTime))).toBeGreaterThan(
      Date.parse(String(before.spec?.acquireTime)),
    );

    // A graceful stop hands over at once: a fresh replica takes it on its next attempts.
    const c = elector('replica-c', true);
    await waitFor(() => c.events.includes('leader:replica-b'), 5_000);
    await b.stop();
    const released = await coordination.readNamespacedLease({ name: leaseName, namespace });
    expect(released.spec?.holderIdentity).toBeUndefined();
    const handover = await waitFor(() => c.e.isLeader(), timings.leaseDurationMs);
    expect(handover).toBeLessThanOrEqual(maxRetryWait + 500);
    const last = await coordination.readNamespacedLease({ name: leaseName, namespace });
    expect(last.spec?.holderIdentity).toBe('replica-c');
    expect(last.spec?.leaseTransitions).toBe(transitionsBefore + 2);
    for (const x of [a, b, c]) expect(x.errors.filter((e) => !(e instanceof LeaseConflictError))).toEqual([]);
  }, 30_000);
});
