import { describe, expect, it } from '@jest/globals';
import type { WarehouseResource } from '@sluice/shared/catalog';
import type { ClusterObject, SluiceKind, WorkerObservation, WorkerRuntimePort } from '@sluice/shared/ports';
import { connector, datamodel, id, NOW, pipeline, status, subscription } from '../../test/plan-fixtures.js';
import type { ObjectRef } from './actions.js';
import { refKey, type CacheView, type Reconciler } from './reconciler.js';
import { kindReconcilers } from './reconcilers.js';

// What each kind's reconciler tells the generic controller: which objects it
// references (the reference index), which objects its changes queue, and
// what its plan reads from the caches. A source, its data model, a target
// and the subscription between them, in a pipeline: ids 1 to 5.

const SOURCE = id(1);
const TARGET = id(4);
let worker: WorkerObservation | undefined;
const runtime: Pick<WorkerRuntimePort, 'observe'> = { observe: async () => worker };
const reconcilers = kindReconcilers({
  runtime,
  slotWalDegradedBytes: 1024 ** 3,
  captureReleaseTimeoutMs: 120_000,
  warehouses: true,
});
const of = (kind: SluiceKind) => reconcilers.find((r) => r.kind === kind) as Reconciler;

const target = connector({ name: 'wh', connectorType: 'KAFKA_TARGET', configuration: {} }, { name: TARGET });
const warehouse: WarehouseResource = {
  apiVersion: 'sluice.dev/v1alpha1',
  kind: 'Warehouse',
  metadata: { name: id(6), namespace: 'ns', generation: 1 },
  spec: {
    name: 'dbx',
    teamId: id(9),
    serverHostname: 'dbx.example.com',
    httpPath: '/sql/1.0/warehouses/abc',
    accessToken: { valueFrom: { secretKeyRef: { name: 'dbx-token', key: 'token' } } },
  },
};
const objects: ClusterObject[] = [connector(), datamodel(), target, subscription(), pipeline(), warehouse];

/** The controller's caches over `objects`, `referencing` by scanning what the reconcilers reference. */
function cacheOf(all: ClusterObject[]): CacheView {
  return {
    get: <T extends ClusterObject>(kind: SluiceKind, namespace: string, name: string | undefined) =>
      all.find((o) => o.kind === kind && o.metadata.namespace === namespace && o.metadata.name === name) as
        T | undefined,
    referencing: <T extends ClusterObject>(kind: SluiceKind, ref: ObjectRef) =>
      all.filter(
        (o) => o.kind === kind && (of(kind).references?.(o) ?? []).some((r) => refKey(r) === refKey(ref)),
      ) as T[],
  };
}
const cache = cacheOf(objects);
const keys = (refs: ObjectRef[] | undefined) => (refs ?? []).map(refKey);
const find = (kind: SluiceKind) => objects.find((o) => o.kind === kind) as ClusterObject;

describe('the reconcilers of the five kinds', () => {
  it('are one per kind; only connectors own workers', () => {
    expect(reconcilers.map((r) => r.kind)).toEqual([
      'Connector',
      'DataModel',
      'Subscription',
      'Pipeline',
      'Warehouse',
    ]);
    expect(reconcilers.filter((r) => r.ownsWorkers).map((r) => r.kind)).toEqual(['Connector']);
    expect(
      kindReconcilers({
        runtime,
        slotWalDegradedBytes: 1,
        captureReleaseTimeoutMs: 1,
        warehouses: false,
      }).map((r) => r.kind),
    ).not.toContain('Warehouse');
  });

  it('reference what their plan reads by id', () => {
    expect(keys(of('DataModel').references?.(find('DataModel')))).toEqual([`Connector/ns/${SOURCE}`]);
    expect(keys(of('Subscription').references?.(find('Subscription')))).toEqual([
      `Connector/ns/${TARGET}`,
      `DataModel/ns/${id(2)}`,
    ]);
    expect(keys(of('Pipeline').references?.(find('Pipeline')))).toEqual([
      `Connector/ns/${SOURCE}`,
      `Connector/ns/${TARGET}`,
      `Subscription/ns/${id(3)}`,
    ]);
    expect(of('Connector').references).toBeUndefined();
    expect(of('Warehouse').references).toBeUndefined();
  });

  it('queue on a change the objects whose plan reads the changed one', () => {
    const dependents = (kind: SluiceKind, o = find(kind)) => keys(of(kind).dependents?.(o, cache));
    // A source: its pipeline, its data model, and the target reading that data model (it waits for the source).
    expect(dependents('Connector')).toEqual([
      `Pipeline/ns/${id(5)}`,
      `DataModel/ns/${id(2)}`,
      `Connector/ns/${TARGET}`,
    ]);
    // A target: its pipeline and the subscription delivered to it.
    expect(dependents('Connector', target)).toEqual([`Pipeline/ns/${id(5)}`, `Subscription/ns/${id(3)}`]);
    expect(dependents('DataModel')).toEqual([`Connector/ns/${SOURCE}`, `Connector/ns/${TARGET}`]);
    expect(dependents('Subscription')).toEqual([`Connector/ns/${TARGET}`, `Pipeline/ns/${id(5)}`]);
    // A pipeline decides its parts' effective state.
    expect(dependents('Pipeline')).toEqual([
      `Connector/ns/${SOURCE}`,
      `Connector/ns/${TARGET}`,
      `Subscription/ns/${id(3)}`,
    ]);
    expect(dependents('Warehouse')).toEqual([]);
  });

  it('plan from the caches: a target waits for its source, a subscription is delivered by its pipeline', async () => {
    worker = undefined;
    const ctx = { cache, now: NOW };
    const ref = (o: ClusterObject): ObjectRef => ({ kind: o.kind, namespace: 'ns', name: o.metadata.name });
    const waiting = await of('Connector').reconcile(ref(target), target, ctx);
    expect(status(waiting!)).toMatchObject({
      state: 'building',
      message: 'Waiting for source orders-src to be live',
    });
    const off = subscription({ enabled: false });
    const delivered = await of('Subscription').reconcile(ref(off), off, ctx);
    expect(status(delivered!)).toMatchObject({
      effectiveState: 'enabled',
      effectiveReason: 'Enabled by pipeline orders-copy',
    });
    const building = await of('Pipeline').reconcile(ref(find('Pipeline')), find('Pipeline'), ctx);
    expect(status(building!)).toMatchObject({ state: 'building' });
  });

  it('a connector gone from the caches stops its worker, if it has one; other kinds plan nothing for a gone object', async () => {
    const gone: ObjectRef = { kind: 'Connector', namespace: 'ns', name: id(7) };
    worker = { id: `ns/${id(7)}`, phase: 'ready', configHash: 'h', restarts: 0 };
    expect(await of('Connector').reconcile(gone, undefined, { cache, now: NOW })).toEqual({
      actions: [{ type: 'stopWorker', id: `ns/${id(7)}` }],
    });
    worker = undefined;
    expect(await of('Connector').reconcile(gone, undefined, { cache, now: NOW })).toBeUndefined();
    for (const kind of ['DataModel', 'Subscription', 'Pipeline', 'Warehouse'] as const) {
      expect(await of(kind).reconcile({ ...gone, kind }, undefined, { cache, now: NOW })).toBeUndefined();
    }
  });
});
