import { describe, expect, it } from '@jest/globals';
import {
  RESTART_ANNOTATION,
  STOP_ANNOTATION,
  WORKER_FINALIZER,
  type ConnectorResource,
  type DataModelResource,
  type PipelineResource,
  type SubscriptionResource,
} from '@sluice/shared/catalog';
import { type WorkerObservation } from '@sluice/shared/ports';
import type { Action, Plan } from './actions.js';
import { connectorWorker, planConnector, type ConnectorInput } from './connector/connector.plan.js';
import { planDataModel } from './datamodel/datamodel.plan.js';
import { planSubscription } from './subscription/subscription.plan.js';

// The operator's planners with pipelines: the parts' effective state decides
// what runs, and no plan ever writes a spec.

const NOW = '2026-11-23T12:00:00Z';
const T1 = '2026-11-23T10:00:00Z';
const T2 = '2026-11-23T11:00:00Z';
const SRC = '00000000-0000-4000-8000-000000000001';
const DM = '00000000-0000-4000-8000-000000000002';
const SUB = '00000000-0000-4000-8000-000000000003';
const DST = '00000000-0000-4000-8000-000000000004';

function connector(
  name: string,
  desiredState: 'running' | 'stopped',
  annotations: Record<string, string> = {},
  status?: ConnectorResource['status'],
): ConnectorResource {
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'Connector',
    metadata: {
      name,
      namespace: 'ns',
      uid: `uid-${name}`,
      generation: 1,
      finalizers: [WORKER_FINALIZER],
      annotations,
    },
    spec: {
      name: name === SRC ? 'orders-in' : 'orders-out',
      teamId: SRC,
      connectorType: name === SRC ? 'KAFKA_SOURCE' : 'KAFKA_TARGET',
      configuration: name === SRC ? { topic: 'orders' } : { bootstrap_server: 'kafka:9092' },
      desiredState,
    },
    ...(status ? { status } : {}),
  };
}
const datamodel: DataModelResource = {
  apiVersion: 'sluice.dev/v1alpha1',
  kind: 'DataModel',
  metadata: { name: DM, namespace: 'ns', generation: 1 },
  spec: {
    name: 'orders-in_orders',
    teamId: SRC,
    connectorId: SRC,
    entry: 'orders',
    enabled: true,
    sourceTopic: 'orders',
    errorTable: { enabled: false },
  },
};
const subscription = (annotations: Record<string, string> = {}): SubscriptionResource => ({
  apiVersion: 'sluice.dev/v1alpha1',
  kind: 'Subscription',
  metadata: { name: SUB, namespace: 'ns', generation: 1, annotations },
  spec: {
    name: 'orders-copy',
    teamId: SRC,
    datamodelId: DM,
    targetConnectorId: DST,
    targetTableName: 'orders-copy',
    mapperConfig: [],
    consumerId: 'sluice-orders-copy',
    backfill: false,
    enabled: false,
    errorTable: { enabled: false },
  },
});
function pipeline(
  desiredState: 'running' | 'paused',
  annotations: Record<string, string> = {},
  name = 'orders-copy',
): PipelineResource {
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'Pipeline',
    metadata: {
      name: `00000000-0000-4000-8000-00000000000${name.length % 10}`,
      namespace: 'ns',
      annotations,
    },
    spec: {
      name,
      teamId: SRC,
      sourceConnectorId: SRC,
      targetConnectorId: DST,
      datamodelId: DM,
      subscriptionId: SUB,
      ownsSource: true,
      ownsTarget: true,
      desiredState,
      version: 1,
    },
  };
}

function targetInput(
  c: ConnectorResource,
  pipelines: PipelineResource[],
  worker?: WorkerObservation,
): ConnectorInput {
  const source = connector(SRC, 'stopped', {}, { state: 'live' });
  return {
    connector: c,
    datamodels: [],
    subscriptions: [{ subscription: subscription(), datamodel, source, pipelines }],
    pipelines,
    worker,
    now: NOW,
  };
}

const types = (plan: Plan) => plan.actions.map((a) => a.type);
const status = (plan: Plan) =>
  (
    plan.actions.find((a) => a.type === 'patchStatus' && 'state' in a.status) as
      Extract<Action, { type: 'patchStatus' }> | undefined
  )?.status;
const partStatus = (plan: Plan) =>
  (plan.actions.find((a) => a.type === 'patchStatus') as Extract<Action, { type: 'patchStatus' }>).status;
const noSpecWrite = (plan: Plan) =>
  expect(plan.actions.filter((a) => a.type === 'patch' && 'spec' in (a.patch as object))).toEqual([]);

describe('planConnector with the pipelines that use it', () => {
  it('a connector declared stopped runs for its running pipeline, says why, and its spec stays as declared', () => {
    const plan = planConnector(targetInput(connector(DST, 'stopped'), [pipeline('running')]));
    noSpecWrite(plan);
    expect(types(plan)).toContain('ensureWorker');
    expect(status(plan)).toMatchObject({
      state: 'building',
      effectiveState: 'running',
      effectiveReason: 'Run by pipeline orders-copy',
    });
    // The subscription the pipeline enables is in the worker's configuration.
    const ensure = plan.actions.find((a) => a.type === 'ensureWorker') as Extract<
      Action,
      { type: 'ensureWorker' }
    >;
    expect(JSON.stringify(ensure.spec.config)).toContain('"enabled":true');
  });

  it('a stop call after the pipeline started sticks: the worker stops and is not started again', () => {
    const running = pipeline('running', { [RESTART_ANNOTATION]: T1 });
    const c = connector(DST, 'stopped', { [STOP_ANNOTATION]: T2 }, { state: 'live' });
    const { hash } = connectorWorker(targetInput(connector(DST, 'stopped'), [running]));
    const worker: WorkerObservation = { id: 'ns/x', phase: 'ready', configHash: hash, restarts: 0 };
    const plan = planConnector(targetInput(c, [running], worker));
    noSpecWrite(plan);
    expect(types(plan)).toContain('stopWorker');
    expect(types(plan)).not.toContain('ensureWorker');
    expect(status(plan)).toMatchObject({
      state: 'stopping',
      effectiveState: 'stopped',
      effectiveReason: 'Stopped by a stop call after pipeline orders-copy started',
    });
    const gone = planConnector(targetInput({ ...c, status: { state: 'stopping' } }, [running]));
    expect(types(gone)).not.toContain('ensureWorker');
    expect(status(gone)).toMatchObject({ state: 'paused' });
  });

  it('pausing the pipeline stops its target once: no relaunch with the configuration the pause changes', () => {
    const started = { [RESTART_ANNOTATION]: T1 };
    const live = connector(DST, 'stopped', {}, { state: 'live', restartRequestedAt: T1 });
    const { hash } = connectorWorker(targetInput(live, [pipeline('running', started)]));
    const worker: WorkerObservation = { id: 'ns/x', phase: 'ready', configHash: hash, restarts: 0 };
    const paused = pipeline('paused', { ...started, [STOP_ANNOTATION]: T2 });
    const plan = planConnector(targetInput(live, [paused], worker));
    expect(types(plan).filter((t) => t === 'ensureWorker' || t === 'stopWorker')).toEqual(['stopWorker']);
    const events = plan.actions
      .filter((a) => a.type === 'event')
      .map((a) => (a as { message: string }).message);
    expect(events).toEqual(['live → stopping: Stopping the worker']);
  });

  it('a start request restarts the worker once and never goes back when the pipeline that made it goes', () => {
    const a = pipeline('running', { [RESTART_ANNOTATION]: T1 }, 'a');
    const b = pipeline('running', { [RESTART_ANNOTATION]: T2 }, 'bb');
    const c = connector(DST, 'running');
    const first = connectorWorker(targetInput(c, [a])).hash;
    const withB = connectorWorker(targetInput(c, [a, b])).hash;
    expect(withB).not.toBe(first);
    // Started for b's request (recorded in status); b is paused (it no longer runs it): no restart.
    const recorded = { ...c, status: { state: 'live' as const, restartRequestedAt: T2 } };
    const pausedB = pipeline('paused', { [RESTART_ANNOTATION]: T2, [STOP_ANNOTATION]: NOW }, 'bb');
    pausedB.spec.ownsTarget = false;
    expect(connectorWorker(targetInput(recorded, [a, pausedB])).hash).toBe(withB);
    const worker: WorkerObservation = { id: 'ns/x', phase: 'ready', configHash: withB, restarts: 0 };
    expect(types(planConnector(targetInput(recorded, [a, pausedB], worker)))).not.toContain('ensureWorker');
  });

  it('deleted (kubectl or the API): its data models go before its finalizer', () => {
    const c = {
      ...connector(SRC, 'running'),
      metadata: { ...connector(SRC, 'running').metadata, deletionTimestamp: NOW },
    };
    const plan = planConnector({
      connector: c,
      datamodels: [datamodel],
      subscriptions: [],
      worker: undefined,
      now: NOW,
    });
    expect(plan.actions.map((a) => `${a.type}:${'ref' in a ? a.ref.kind : ''}`)).toEqual([
      'delete:DataModel',
      'patch:Connector',
    ]);
  });
});

describe('planSubscription with the pipelines that use it, and planDataModel', () => {
  it('a subscription declared disabled is delivered for its running pipeline, and its status says so', () => {
    const target = connector(DST, 'stopped', {}, { state: 'live' });
    const plan = planSubscription(subscription(), target, NOW, [pipeline('running')]);
    noSpecWrite(plan);
    expect(partStatus(plan)).toMatchObject({
      effectiveState: 'enabled',
      effectiveReason: 'Enabled by pipeline orders-copy',
      conditions: expect.arrayContaining([
        expect.objectContaining({ type: 'Ready', status: 'True', reason: 'Flowing' }),
      ]),
    });
    const paused = planSubscription(subscription(), target, NOW, [pipeline('paused')]);
    expect(partStatus(paused)).toMatchObject({
      effectiveState: 'disabled',
      effectiveReason: 'Disabled with pipeline orders-copy (paused)',
    });
  });

  it('a data model gets an ownerReference to its connector, once', () => {
    const source = connector(SRC, 'stopped', {}, { state: 'paused' });
    const plan = planDataModel(datamodel, source, NOW);
    expect(plan.actions[0]).toEqual({
      type: 'patch',
      ref: { kind: 'DataModel', namespace: 'ns', name: DM },
      patch: {
        metadata: {
          ownerReferences: [
            { apiVersion: 'sluice.dev/v1alpha1', kind: 'Connector', name: SRC, uid: `uid-${SRC}` },
          ],
        },
      },
    });
    const owned = {
      ...datamodel,
      metadata: {
        ...datamodel.metadata,
        ownerReferences: [
          { apiVersion: 'sluice.dev/v1alpha1', kind: 'Connector', name: SRC, uid: `uid-${SRC}` },
        ],
      },
    };
    expect(types(planDataModel(owned, source, NOW))).not.toContain('patch');
  });
});
