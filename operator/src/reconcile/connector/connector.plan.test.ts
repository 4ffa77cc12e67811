import { describe, expect, it } from '@jest/globals';
import {
  CONNECTOR_MOVES,
  RESTART_ANNOTATION,
  WORKER_FINALIZER,
  type ConnectorMove,
  type SubscriptionResource,
} from '@sluice/shared/catalog';
import { type WorkerObservation } from '@sluice/shared/ports';
import { applied, connector, id, input, NOW, status, types } from '../../../test/plan-fixtures.js';
import { connectorWorker, planConnector } from './connector.plan.js';

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
    const sub: SubscriptionResource = {
      apiVersion: 'sluice.dev/v1alpha1',
      kind: 'Subscription',
      metadata: { name: id(3), namespace: 'ns' },
      spec: {
        name: 'orders-to-wh',
        teamId: id(9),
        datamodelId: id(2),
        targetConnectorId: id(1),
        targetTableName: 't',
        mapperConfig: [],
        consumerId: 'c',
        enabled: true,
        backfill: false,
        errorTable: { enabled: false },
      },
    };
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

describe('the automatic moves of spec 3.2 (CONNECTOR_MOVES)', () => {
  it('are the states the planner writes, each one made by the planner', () => {
    const c = connector();
    const { hash } = connectorWorker(input(c));
    const observed = (over: Partial<WorkerObservation>): WorkerObservation => ({
      id: id(1),
      phase: 'starting',
      configHash: hash,
      restarts: 0,
      ...over,
    });
    const stopped = connector({ desiredState: 'stopped' });
    const made: Record<ConnectorMove, ReturnType<typeof planConnector>> = {
      workerReady: planConnector(input(c, observed({ phase: 'ready' }))),
      workerStarting: planConnector(input(c)),
      workerFailed: planConnector(input(c, observed({ phase: 'failed', message: 'bad password' }))),
      stopAsked: planConnector(input(stopped, observed({ phase: 'ready' }))),
      workerGone: planConnector(input(stopped)),
    };
    expect(Object.keys(made).sort()).toEqual(Object.keys(CONNECTOR_MOVES).sort());
    for (const [move, plan] of Object.entries(made)) {
      expect([move, status(plan)?.state]).toEqual([move, CONNECTOR_MOVES[move as ConnectorMove].to]);
    }
  });

  describe('replicas (spec.replicas, the scale subresource)', () => {
    const target = (replicas?: number) =>
      connector({
        name: 'wh',
        connectorType: 'POSTGRES_TARGET',
        configuration: {},
        ...(replicas !== undefined ? { replicas } : {}),
      });
    /** The worker of `hash` running `replicas` instances, `ready` of them ready. */
    const readyWorker = (hash: string, replicas: number, ready: number): WorkerObservation => ({
      id: id(1),
      phase: 'ready',
      configHash: hash,
      restarts: 0,
      replicas,
      readyReplicas: ready,
    });
    const ensured = (plan: ReturnType<typeof planConnector>) =>
      plan.actions.find((a) => a.type === 'ensureWorker') as
        { spec: { replicas?: number; scalesOut?: boolean; configHash: string; labels?: object } } | undefined;

    it("starts a target's worker with its replica count, scaling out, 1 by default", () => {
      expect(ensured(planConnector(input(target(3))))?.spec).toMatchObject({ replicas: 3, scalesOut: true });
      expect(ensured(planConnector(input(target())))?.spec).toMatchObject({ replicas: 1, scalesOut: true });
    });

    it('leaves the configuration hash alone: a new count is a scale, not a restart', () => {
      expect(connectorWorker(input(target(3))).hash).toBe(connectorWorker(input(target(1))).hash);
      expect(connectorWorker(input(target(3))).hash).toBe(connectorWorker(input(target())).hash);
      const { hash } = connectorWorker(input(target(1)));
      const one = readyWorker(hash, 1, 1);
      const live = applied(target(1), planConnector(input(target(1), one)));
      // Scaled to 3: the same worker (same hash) asked for 3 instances; it stays live meanwhile.
      const scaled = planConnector(input({ ...live, spec: { ...live.spec, replicas: 3 } }, one));
      expect(ensured(scaled)?.spec).toMatchObject({ replicas: 3, configHash: hash });
      expect(status(scaled)?.state).toBeUndefined();
      // Once the runtime runs 3 (2 ready so far), nothing more is asked; status.replicas says 2.
      const three = readyWorker(hash, 3, 2);
      const after = planConnector(input({ ...live, spec: { ...live.spec, replicas: 3 } }, three));
      expect(ensured(after)).toBeUndefined();
      expect(status(after)).toEqual({ replicas: 2 });
    });

    it("writes the ready workers and their pods' selector into the status the scale subresource reads", () => {
      const { hash } = connectorWorker(input(target(2)));
      const plan = planConnector(input(target(2), readyWorker(hash, 2, 2)));
      expect(status(plan)).toMatchObject({
        state: 'live',
        replicas: 2,
        selector: `app.kubernetes.io/managed-by=sluice-operator,sluice.dev/connector-id=${id(1)}`,
      });
      expect(ensured(planConnector(input(target(2))))?.spec.labels).toEqual({
        'sluice.dev/connector-id': id(1),
      });
      // Stopped: no worker ready.
      const stopped = connector({
        name: 'wh',
        connectorType: 'POSTGRES_TARGET',
        desiredState: 'stopped',
        replicas: 2,
      });
      expect(status(planConnector(input(stopped)))).toMatchObject({ state: 'paused', replicas: 0 });
    });

    it('runs one worker for a source asked for 3 (one reader), recreated not rolled, and says why (Degraded)', () => {
      const source = connector({ connectorType: 'POSTGRES_SOURCE', configuration: {}, replicas: 3 });
      const plan = planConnector(input(source));
      expect(ensured(plan)?.spec).toMatchObject({ replicas: 1, scalesOut: false });
      const degraded = (
        status(plan)?.conditions as { type: string; status: string; reason: string; message: string }[]
      ).find((x) => x.type === 'Degraded');
      expect(degraded).toMatchObject({ status: 'True', reason: 'SingleReader' });
      expect(degraded?.message).toContain('spec.replicas is 3, running 1 worker');
      expect(degraded?.message).toContain('replication slot has one reader');
      // Its observed single worker is no reason to ask again.
      const one = readyWorker(connectorWorker(input(source)).hash, 1, 1);
      expect(ensured(planConnector(input(source, one)))).toBeUndefined();
    });
  });
});
