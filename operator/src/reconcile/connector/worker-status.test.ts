import { describe, expect, it } from '@jest/globals';
import {
  WORKER_FINALIZER,
  type ConnectorResource,
  type ConnectorStatus,
  type WorkerTermination,
} from '@sluice/shared/catalog';
import { mergePatch } from '@sluice/shared/cluster';
import { type WorkerObservation } from '@sluice/shared/ports';
import type { Action, Plan } from '../actions.js';
import { connectorWorker, planConnector } from './connector.plan.js';
import { nextWorkerStatus, WORKER_FAILURE_THRESHOLD, workerStatusPatch } from './worker-status.js';

// The connector's side of a worker that ends: the runtime restarts it; the
// planner says building, live again once ready, and error only after
// WORKER_FAILURE_THRESHOLD restarts in a row without being ready.

const NOW = '2026-11-26T12:00:00Z';
const ID = '00000000-0000-4000-8000-000000000001';

function connector(status?: ConnectorStatus): ConnectorResource {
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'Connector',
    metadata: { name: ID, namespace: 'ns', generation: 1, finalizers: [WORKER_FINALIZER] },
    spec: {
      name: 'orders-src',
      teamId: '00000000-0000-4000-8000-000000000009',
      connectorType: 'KAFKA_SOURCE',
      configuration: { topic: ['orders'] },
      desiredState: 'running',
    },
    ...(status ? { status } : {}),
  } as ConnectorResource;
}

const hash = connectorWorker({
  connector: connector(),
  datamodels: [],
  subscriptions: [],
  worker: undefined,
  now: NOW,
}).hash;
const killed: WorkerTermination = {
  reason: 'Error',
  exitCode: 137,
  signal: 'SIGKILL',
  finishedAt: '2026-11-26T11:59:59.000Z',
};
const failedAtOnce: WorkerTermination = {
  reason: 'Error',
  exitCode: 1,
  message: 'password authentication failed for user "app"',
  finishedAt: '2026-11-26T11:59:59.000Z',
};
const observed = (over: Partial<WorkerObservation>): WorkerObservation => ({
  id: `ns/${ID}`,
  phase: 'starting',
  configHash: hash,
  restarts: 0,
  ...over,
});

/** Plans, and applies the status patch as the API server does (RFC 7386). */
function step(c: ConnectorResource, worker: WorkerObservation): { c: ConnectorResource; plan: Plan } {
  const plan = planConnector({ connector: c, datamodels: [], subscriptions: [], worker, now: NOW });
  let out = c;
  for (const a of plan.actions as Action[]) {
    if (a.type === 'patchStatus')
      out = { ...out, status: mergePatch(out.status ?? {}, a.status) as ConnectorStatus };
  }
  return { c: out, plan };
}

describe('a worker that ends (planConnector)', () => {
  it('a transient crash: building while it restarts, live again once ready, the restart counted', () => {
    let { c } = step(connector(), observed({ phase: 'ready' }));
    expect(c.status).toMatchObject({ state: 'live', worker: { restarts: 0, consecutiveFailures: 0 } });
    ({ c } = step(c, observed({ phase: 'failed', lastTermination: killed })));
    expect(c.status?.state).toBe('building');
    expect(c.status?.message).toBe('The worker was killed by SIGKILL; restarting it (restart 1)');
    ({ c } = step(c, observed({ phase: 'starting', restarts: 1, lastTermination: killed })));
    expect(c.status).toMatchObject({ state: 'building', worker: { restarts: 1, consecutiveFailures: 1 } });
    const back = step(c, observed({ phase: 'ready', restarts: 1, lastTermination: killed }));
    const plan = back.plan;
    c = back.c;
    expect(plan.actions.some((a) => a.type === 'ensureWorker')).toBe(false);
    expect(c.status).toMatchObject({
      state: 'live',
      worker: { restarts: 1, consecutiveFailures: 0, lastTermination: killed },
    });
    // Converged: nothing more to write.
    expect(step(c, observed({ phase: 'ready', restarts: 1, lastTermination: killed })).plan.actions).toEqual(
      [],
    );
  });

  it(`is error with the worker's own line after ${WORKER_FAILURE_THRESHOLD} restarts without becoming ready, and live if it recovers`, () => {
    let { c } = step(connector(), observed({ phase: 'starting' }));
    const states: string[] = [];
    for (let restarts = 0; restarts <= WORKER_FAILURE_THRESHOLD; restarts++) {
      ({ c } = step(c, observed({ phase: 'failed', restarts, lastTermination: failedAtOnce })));
      states.push(c.status!.state!);
      ({ c } = step(
        c,
        observed({ phase: 'starting', restarts: restarts + 1, lastTermination: failedAtOnce }),
      ));
      states.push(c.status!.state!);
    }
    // Restarts 1 and 2 come back building; the third restart without ready is error, and it stays so.
    expect(states).toEqual([
      'building',
      'building',
      'building',
      'building',
      'building',
      'error',
      'error',
      'error',
    ]);
    expect(c.status?.message).toBe(
      'The worker exited with code 1: password authentication failed for user "app" ' +
        '(restarted 4 times without becoming ready; still retrying)',
    );
    expect(c.status?.conditions?.find((x) => x.type === 'Degraded')?.status).toBe('True');
    ({ c } = step(c, observed({ phase: 'ready', restarts: 4, lastTermination: failedAtOnce })));
    expect(c.status).toMatchObject({ state: 'live', worker: { consecutiveFailures: 0 } });
  });

  it('a worker that cannot be started at all (no termination: a missing Secret) is error at once', () => {
    const { c } = step(
      connector(),
      observed({ phase: 'failed', message: 'the worker cannot start (CreateContainerConfigError)' }),
    );
    expect(c.status).toMatchObject({
      state: 'error',
      message: 'the worker cannot start (CreateContainerConfigError)',
    });
  });
});

describe('nextWorkerStatus / workerStatusPatch', () => {
  it('counts restarts since ready across looks, and starts over with a new worker', () => {
    const a = nextWorkerStatus(undefined, observed({ restarts: 2 }));
    expect(a.consecutiveFailures).toBe(2);
    const b = nextWorkerStatus(a, observed({ restarts: 5 }));
    expect(b.consecutiveFailures).toBe(5);
    expect(nextWorkerStatus(b, observed({ phase: 'ready', restarts: 5 })).consecutiveFailures).toBe(0);
    // A new configuration or a start: the runtime's count went back to zero.
    expect(nextWorkerStatus(b, observed({ restarts: 0 })).consecutiveFailures).toBe(0);
  });

  it('clears a last termination the new worker no longer has, and writes nothing when unchanged', () => {
    const before = { restarts: 3, consecutiveFailures: 3, lastTermination: failedAtOnce };
    expect(workerStatusPatch(before, { restarts: 0, consecutiveFailures: 0 })).toEqual({
      restarts: 0,
      consecutiveFailures: 0,
      lastTermination: null,
    });
    const reordered = { lastTermination: { ...failedAtOnce }, consecutiveFailures: 3, restarts: 3 };
    expect(workerStatusPatch(before, reordered)).toBeUndefined();
  });
});
