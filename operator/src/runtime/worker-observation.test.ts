import { describe, expect, it } from '@jest/globals';
import type { V1ContainerStatus, V1Deployment, V1Pod } from '@kubernetes/client-node';
import { observeWorker } from './worker-observation.js';

const hash = { 'sluice.dev/config-hash': 'h1' };
const deployment = (
  status: V1Deployment['status'],
  extra: Partial<V1Deployment['metadata']> = {},
): V1Deployment => ({
  metadata: { name: 'sluice-worker-c', generation: 2, annotations: hash, ...extra },
  status,
});
/** A pod of the worker whose one container reports `status`. */
const workerPod = (
  status: Pick<V1ContainerStatus, 'ready' | 'restartCount'> & Partial<V1ContainerStatus>,
  annotations = hash,
): V1Pod => ({
  metadata: { annotations },
  status: { containerStatuses: [{ name: 'worker', image: 'i', imageID: '', ...status }] },
});
const pod = (ready: boolean, restartCount: number, annotations = hash): V1Pod =>
  workerPod(
    { ready, restartCount, lastState: { terminated: { exitCode: 1, message: 'lost the broker' } } },
    annotations,
  );
const rolled = { observedGeneration: 2, updatedReplicas: 1, readyReplicas: 1 };

describe('observeWorker', () => {
  it('counts the ready pods of the current configuration of a scaled worker (status.replicas), not old or deleted ones', () => {
    const scaled: V1Deployment = {
      ...deployment({ observedGeneration: 2, updatedReplicas: 3, readyReplicas: 2 }),
      spec: { replicas: 3, selector: {}, template: {} },
    };
    const leaving = { ...pod(true, 0), metadata: { annotations: hash, deletionTimestamp: new Date() } };
    const old = pod(true, 0, { 'sluice.dev/config-hash': 'h0' });
    expect(
      observeWorker('ns/c', scaled, [pod(true, 0), pod(true, 1), pod(false, 0), leaving, old]),
    ).toMatchObject({
      phase: 'ready',
      replicas: 3,
      readyReplicas: 2,
      restarts: 1,
    });
  });

  it('is ready again once a worker that crashed before is ready (Kubernetes restarted it)', () => {
    expect(observeWorker('ns/c', deployment(rolled), [pod(true, 2)])).toMatchObject({
      phase: 'ready',
      restarts: 2,
      lastTermination: { reason: 'Error', exitCode: 1, message: 'lost the broker' },
    });
    // Restarted and running, not ready yet: starting (the connector says building), not failed.
    expect(observeWorker('ns/c', deployment({ ...rolled, readyReplicas: 0 }), [pod(false, 2)])).toMatchObject(
      { phase: 'starting', restarts: 2 },
    );
  });

  it('reads restartCount and lastState.terminated as the process runtime reports a crash: kill -9 is 137, SIGKILL, no message', () => {
    const finishedAt = new Date('2026-11-26T12:00:00Z');
    const crashLooping = workerPod({
      ready: false,
      restartCount: 3,
      state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container' } },
      lastState: { terminated: { exitCode: 137, reason: 'Error', finishedAt } },
    });
    expect(observeWorker('ns/c', deployment({ observedGeneration: 2 }), [crashLooping])).toEqual({
      id: 'ns/c',
      configHash: 'h1',
      phase: 'failed',
      restarts: 3,
      replicas: 1,
      readyReplicas: 0,
      message: 'the worker was killed by SIGKILL',
      lastTermination: {
        reason: 'Error',
        exitCode: 137,
        signal: 'SIGKILL',
        finishedAt: finishedAt.toISOString(),
      },
    });
    // Just ended (before the kubelet restarts it), with its own termination message.
    const ended = workerPod({
      ready: false,
      restartCount: 0,
      state: { terminated: { exitCode: 1, reason: 'Error', message: 'bad password\n', finishedAt } },
    });
    expect(observeWorker('ns/c', deployment({ observedGeneration: 2 }), [ended])).toMatchObject({
      phase: 'failed',
      restarts: 0,
      message: 'the worker exited with code 1: bad password',
      lastTermination: { reason: 'Error', exitCode: 1, message: 'bad password' },
    });
  });

  it('is failed without a termination when the pod cannot run at all (the connector is error at once)', () => {
    const missingSecret = workerPod({
      ready: false,
      restartCount: 0,
      state: { waiting: { reason: 'CreateContainerConfigError', message: 'secret "s" not found' } },
    });
    const o = observeWorker('ns/c', deployment({ observedGeneration: 2 }), [missingSecret]);
    expect(o).toMatchObject({
      phase: 'failed',
      message: 'the worker cannot start (CreateContainerConfigError): secret "s" not found',
    });
    expect(o?.lastTermination).toBeUndefined();
  });

  it('does not trust status the deployment controller wrote for an older generation', () => {
    expect(observeWorker('ns/c', deployment({ ...rolled, observedGeneration: 1 }), [])?.phase).toBe(
      'starting',
    );
  });

  it('ignores pods of an older configuration', () => {
    const old = pod(false, 5, { 'sluice.dev/config-hash': 'h0' });
    expect(observeWorker('ns/c', deployment({}), [old])).toMatchObject({ phase: 'starting', restarts: 0 });
  });

  it('fails when the Deployment gave up or cannot create its pod', () => {
    const deadline = deployment({
      conditions: [
        {
          type: 'Progressing',
          status: 'False',
          reason: 'ProgressDeadlineExceeded',
          message: 'took too long',
        },
      ],
    });
    expect(observeWorker('ns/c', deadline, [])?.message).toBe(
      'the worker did not become ready in time: took too long',
    );
    const quota = deployment({
      conditions: [
        { type: 'ReplicaFailure', status: 'True', reason: 'FailedCreate', message: 'exceeded quota' },
      ],
    });
    expect(observeWorker('ns/c', quota, [])?.message).toBe(
      "the worker's pod could not be created: exceeded quota",
    );
  });

  it('is stopping while being deleted or while pods outlive their Deployment, and gone after', () => {
    expect(observeWorker('ns/c', deployment(rolled, { deletionTimestamp: new Date() }), [])?.phase).toBe(
      'stopping',
    );
    expect(observeWorker('ns/c', undefined, [pod(true, 0)])?.phase).toBe('stopping');
    expect(observeWorker('ns/c', undefined, [])).toBeUndefined();
  });
});
