import { describe, expect, it } from '@jest/globals';
import {
  RESTART_ANNOTATION,
  STOP_ANNOTATION,
  WORKER_FINALIZER,
  type ConnectorResource,
  type PipelineResource,
  type SubscriptionResource,
  type WorkerObservation,
} from '@sluice/shared';
import type { Action, Plan } from './actions.js';
import { connectorWorker, planConnector, type ConnectorInput } from './connector.js';
import { planPart } from './part.js';
import { planPipeline } from './pipeline.js';

const NOW = '2026-11-23T12:00:00Z';
const id = (n: number) => `00000000-0000-4000-8000-00000000000${n}`;

function connector(
  over: Partial<ConnectorResource['spec']> = {},
  meta: Partial<ConnectorResource['metadata']> = {},
) {
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'Connector',
    metadata: { name: id(1), namespace: 'ns', generation: 1, finalizers: [WORKER_FINALIZER], ...meta },
    spec: {
      name: 'orders-src',
      teamId: id(9),
      connectorType: 'KAFKA_SOURCE',
      configuration: { topic: ['orders'] },
      desiredState: 'running',
      ...over,
    },
  } as ConnectorResource;
}

const input = (c: ConnectorResource, worker?: WorkerObservation): ConnectorInput => ({
  connector: c,
  datamodels: [],
  subscriptions: [],
  worker,
  now: NOW,
});

/** Applies a plan's status and patches to the object, as the API server would. */
function applied<T extends { status?: unknown; metadata: { finalizers?: string[] } }>(o: T, plan: Plan): T {
  let out = structuredClone(o);
  for (const a of plan.actions) {
    if (a.type === 'patchStatus') out = { ...out, status: { ...(out.status as object), ...a.status } };
    if (a.type === 'patch' && a.patch.metadata) {
      out = { ...out, metadata: { ...out.metadata, ...(a.patch.metadata as object) } };
    }
  }
  return out;
}

const types = (plan: Plan) => plan.actions.map((a) => a.type);
const status = (plan: Plan) =>
  (plan.actions.find((a) => a.type === 'patchStatus') as Extract<Action, { type: 'patchStatus' }>)?.status;

describe('planConnector (spec 3.2)', () => {
  it('adds its finalizer, starts the worker and says building', () => {
    const plan = planConnector(input(connector({}, { finalizers: [] })));
    expect(types(plan)).toEqual(['patch', 'ensureWorker', 'patchStatus', 'event']);
    expect(plan.actions[0]).toMatchObject({ patch: { metadata: { finalizers: [WORKER_FINALIZER] } } });
    expect(status(plan)).toMatchObject({
      state: 'building',
      message: 'Starting the worker',
      observedGeneration: 1,
    });
  });

  it('is live once the worker with the current configuration is ready, and then plans nothing', () => {
    const c = connector();
    const { hash } = connectorWorker(input(c));
    const ready: WorkerObservation = { id: id(1), phase: 'ready', configHash: hash, restarts: 0 };
    const plan = planConnector(input(c, ready));
    expect(status(plan)).toMatchObject({ state: 'live' });
    const conditions = status(plan)?.conditions as { type: string; status: string }[];
    expect(conditions.map((x) => `${x.type}=${x.status}`)).toEqual([
      'Ready=True',
      'Progressing=False',
      'Degraded=False',
    ]);
    // Idempotent: the same inputs against the written status plan nothing.
    expect(planConnector({ ...input(applied(c, plan), ready), now: '2026-11-23T13:00:00Z' }).actions).toEqual(
      [],
    );
  });

  it('reports a failed worker as error with its message, without restarting it', () => {
    const c = connector();
    const { hash } = connectorWorker(input(c));
    const plan = planConnector(
      input(c, { id: id(1), phase: 'failed', configHash: hash, restarts: 0, message: 'bad password' }),
    );
    expect(types(plan)).toEqual(['patchStatus', 'event']);
    expect(status(plan)).toMatchObject({ state: 'error', message: 'bad password' });
    expect(plan.actions[1]).toMatchObject({ eventType: 'Warning', reason: 'Error' });
  });

  it('restarts the worker when a start asks again (restart annotation) or the configuration changes', () => {
    const c = connector();
    const failed: WorkerObservation = {
      id: id(1),
      phase: 'failed',
      configHash: connectorWorker(input(c)).hash,
      restarts: 0,
    };
    const retried = connector({}, { annotations: { [RESTART_ANNOTATION]: NOW } });
    expect(types(planConnector(input(retried, failed)))).toContain('ensureWorker');
    const changed = connector({ configuration: { topic: ['orders', 'refunds'] } });
    expect(types(planConnector(input(changed, failed)))).toContain('ensureWorker');
  });

  it('stops: stopping while the worker is there, paused when it is gone', () => {
    const c = connector({ desiredState: 'stopped' }, {});
    const running: WorkerObservation = { id: id(1), phase: 'ready', configHash: 'x', restarts: 0 };
    const plan = planConnector(input(c, running));
    expect(types(plan)).toEqual(['stopWorker', 'patchStatus', 'event']);
    expect(status(plan)).toMatchObject({ state: 'stopping' });
    expect(status(planConnector(input(applied(c, plan))))).toMatchObject({ state: 'paused', message: null });
  });

  it('waits for its sources before starting a target worker (source before target)', () => {
    const target = connector({ name: 'wh', connectorType: 'POSTGRES_TARGET', configuration: {} });
    const source = connector({ name: 'orders-src' });
    const sub = {
      metadata: { name: id(3) },
      spec: {
        datamodelId: id(2),
        targetTableName: 't',
        mapperConfig: [],
        consumerId: 'c',
        enabled: true,
        backfill: false,
        errorTable: { enabled: false },
      },
    } as unknown as SubscriptionResource;
    const dm = { metadata: { name: id(2) }, spec: { entry: 'orders', enabled: true } } as never;
    const waiting = planConnector({
      ...input(target),
      subscriptions: [{ subscription: sub, datamodel: dm, source }],
    });
    expect(types(waiting)).not.toContain('ensureWorker');
    expect(status(waiting)).toMatchObject({
      state: 'building',
      message: 'Waiting for source orders-src to be live',
    });
    expect(waiting.requeueAfterMs).toBeGreaterThan(0);
    const live = { ...source, status: { state: 'live' as const } };
    expect(
      types(
        planConnector({
          ...input(target),
          subscriptions: [{ subscription: sub, datamodel: dm, source: live }],
        }),
      ),
    ).toContain('ensureWorker');
  });

  it('on deletion stops the worker first, then releases its finalizer', () => {
    const c = connector({}, { deletionTimestamp: NOW });
    expect(
      types(planConnector(input(c, { id: id(1), phase: 'ready', configHash: 'x', restarts: 0 }))),
    ).toEqual(['stopWorker']);
    expect(planConnector(input(c)).actions).toEqual([
      {
        type: 'patch',
        ref: { kind: 'Connector', namespace: 'ns', name: id(1) },
        patch: { metadata: { finalizers: [] } },
      },
    ]);
  });

  it('on deletion removes its managed Secret before the finalizer, only in the secret namespace', () => {
    const secret = `sluice-connector-${id(1)}`;
    const c = connector(
      {
        configuration: {
          topic: ['orders'],
          sasl_password: { valueFrom: { secretKeyRef: { name: secret, key: 'k' } } },
        },
      },
      { deletionTimestamp: NOW },
    );
    expect(types(planConnector({ ...input(c), secretNamespace: 'ns' }))).toEqual(['deleteSecret', 'patch']);
    expect(planConnector({ ...input(c), secretNamespace: 'ns' }).actions[0]).toEqual({
      type: 'deleteSecret',
      namespace: 'ns',
      name: secret,
    });
    // Another namespace's Secret of the same name is not this connector's.
    expect(types(planConnector({ ...input(c), secretNamespace: 'other' }))).toEqual(['patch']);
    // Workers apart from the control plane: its connectors' Secrets are in the worker namespace.
    expect(
      planConnector({ ...input(c), secretNamespace: 'ns-workers', homeNamespace: 'ns' }).actions[0],
    ).toEqual({ type: 'deleteSecret', namespace: 'ns-workers', name: secret });
    expect(
      types(planConnector({ ...input(c), secretNamespace: 'ns-workers', homeNamespace: 'other' })),
    ).toEqual(['patch']);
    // A connector that never had a managed Secret (all references are the user's) deletes none.
    expect(
      types(planConnector({ ...input(connector({}, { deletionTimestamp: NOW })), secretNamespace: 'ns' })),
    ).toEqual(['patch']);
  });
});

describe('planPipeline (spec 3.1)', () => {
  const pipeline = (desiredState: 'draft' | 'running' | 'paused', annotations?: Record<string, string>) =>
    ({
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Pipeline',
      metadata: { name: id(5), namespace: 'ns', generation: 2, ...(annotations ? { annotations } : {}) },
      spec: {
        name: 'p',
        teamId: id(9),
        sourceConnectorId: id(1),
        targetConnectorId: id(4),
        datamodelId: id(2),
        subscriptionId: id(3),
        ownsSource: true,
        ownsTarget: false,
        desiredState,
        version: 1,
      },
    }) as PipelineResource;
  const src = (state?: string, desiredState: 'running' | 'stopped' = 'running') =>
    ({
      ...connector({ desiredState }),
      status: state ? { state, message: state === 'error' ? 'no route to host' : undefined } : undefined,
    }) as ConnectorResource;
  const dst = (state?: string, desiredState: 'running' | 'stopped' = 'running') =>
    ({
      ...connector({ name: 'wh', desiredState }, { name: id(4) }),
      status: state ? { state } : undefined,
    }) as ConnectorResource;
  const sub = (enabled: boolean) =>
    ({
      kind: 'Subscription',
      metadata: { name: id(3), namespace: 'ns' },
      spec: { enabled },
    }) as SubscriptionResource;

  it('start: writes only its own status, never a part (their effective state reads it)', () => {
    const plan = planPipeline({
      pipeline: pipeline('running', { [RESTART_ANNOTATION]: NOW }),
      source: src(undefined, 'stopped'),
      target: dst(),
      subscription: sub(false),
      now: NOW,
    });
    expect(types(plan)).toEqual(['patchStatus', 'event']);
    expect(status(plan)).toMatchObject({ state: 'building' });
  });

  it('is building until both connectors were started for its last start, then live', () => {
    const started = { [RESTART_ANNOTATION]: NOW };
    const before = { state: 'live', restartRequestedAt: '2026-11-23T11:00:00Z' };
    const stale = planPipeline({
      pipeline: pipeline('running', started),
      source: { ...src(), status: before } as ConnectorResource,
      target: { ...dst(), status: { state: 'live', restartRequestedAt: NOW } } as ConnectorResource,
      subscription: sub(false),
      now: NOW,
    });
    expect(status(stale)).toMatchObject({ state: 'building', message: 'Waiting for orders-src to be live' });
    const current = { state: 'live', restartRequestedAt: NOW };
    const live = planPipeline({
      pipeline: pipeline('running', started),
      source: { ...src(), status: current } as ConnectorResource,
      target: { ...dst(), status: current } as ConnectorResource,
      subscription: sub(false),
      now: NOW,
    });
    expect(status(live)).toMatchObject({ state: 'live' });
  });

  it('is error, naming the part, when a part was stopped by a call after its start', () => {
    const plan = planPipeline({
      pipeline: pipeline('running', { [RESTART_ANNOTATION]: '2026-11-23T11:00:00Z' }),
      source: {
        ...src('paused', 'stopped'),
        metadata: { ...src().metadata, annotations: { [STOP_ANNOTATION]: NOW } },
      } as ConnectorResource,
      target: dst('live'),
      subscription: sub(true),
      now: NOW,
    });
    expect(status(plan)).toMatchObject({
      state: 'error',
      message:
        'Source orders-src was stopped after the pipeline started: start it, or start the pipeline again',
    });
  });

  it('is live only when both connectors are live; error carries the failing part', () => {
    const live = planPipeline({
      pipeline: pipeline('running'),
      source: src('live'),
      target: dst('live'),
      subscription: sub(true),
      now: NOW,
    });
    expect(status(live)).toMatchObject({ state: 'live', observedGeneration: 2 });
    const building = planPipeline({
      pipeline: pipeline('running'),
      source: src('live'),
      target: dst('building'),
      subscription: sub(true),
      now: NOW,
    });
    expect(status(building)).toMatchObject({ state: 'building', message: 'Waiting for wh to be live' });
    const failed = planPipeline({
      pipeline: pipeline('running'),
      source: src('error'),
      target: dst('live'),
      subscription: sub(true),
      now: NOW,
    });
    expect(status(failed)).toMatchObject({ state: 'error', message: 'Source orders-src: no route to host' });
  });

  it('pause: paused at once, from any state, writing nothing but its status', () => {
    for (const state of ['live', 'building', 'error'] as const) {
      const plan = planPipeline({
        pipeline: { ...pipeline('paused'), status: { state } },
        source: src('live'),
        target: dst('error'),
        subscription: sub(true),
        now: NOW,
      });
      expect(types(plan)).toEqual(['patchStatus', 'event']);
      expect(status(plan)).toMatchObject({ state: 'paused' });
    }
  });

  it('a draft does nothing to its parts', () => {
    const plan = planPipeline({
      pipeline: pipeline('draft'),
      source: src(),
      target: dst(),
      subscription: sub(false),
      now: NOW,
    });
    expect(types(plan)).toEqual(['patchStatus', 'event']);
    expect(status(plan)).toMatchObject({ state: 'draft' });
  });
});

describe('planPart (data models and subscriptions)', () => {
  it('is Ready when enabled and its connector is live, Degraded when it failed, neither when disabled', () => {
    const dm = {
      kind: 'DataModel',
      metadata: { name: id(2), namespace: 'ns', generation: 1 },
      spec: { enabled: true },
    } as never;
    const ready = (s: ReturnType<typeof status>) =>
      (s?.conditions as { type: string; status: string }[]).map((c) => `${c.type}=${c.status}`);
    expect(ready(status(planPart(dm, { ...connector(), status: { state: 'live' } }, NOW)))).toEqual([
      'Ready=True',
      'Progressing=False',
      'Degraded=False',
    ]);
    expect(
      ready(status(planPart(dm, { ...connector(), status: { state: 'error', message: 'x' } }, NOW))),
    ).toEqual(['Ready=False', 'Progressing=False', 'Degraded=True']);
    const off = {
      kind: 'DataModel',
      metadata: { name: id(2), namespace: 'ns', generation: 1 },
      spec: { enabled: false },
    } as never;
    expect(ready(status(planPart(off, connector(), NOW)))).toEqual([
      'Ready=False',
      'Progressing=False',
      'Degraded=False',
    ]);
  });
});
