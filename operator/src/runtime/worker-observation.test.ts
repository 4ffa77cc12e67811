import { describe, expect, it } from '@jest/globals';
import type { V1Deployment, V1Pod } from '@kubernetes/client-node';
import { observeWorker } from './worker-observation.js';

const hash = { 'sluice.dev/config-hash': 'h1' };
const deployment = (
  status: V1Deployment['status'],
  extra: Partial<V1Deployment['metadata']> = {},
): V1Deployment => ({
  metadata: { name: 'sluice-worker-c', generation: 2, annotations: hash, ...extra },
  status,
});
const pod = (ready: boolean, restartCount: number, annotations = hash): V1Pod => ({
  metadata: { annotations },
  status: {
    containerStatuses: [
      {
        name: 'worker',
        image: 'i',
        imageID: '',
        ready,
        restartCount,
        lastState: { terminated: { exitCode: 1, message: 'lost the broker' } },
      },
    ],
  },
});
const rolled = { observedGeneration: 2, updatedReplicas: 1, readyReplicas: 1 };

describe('observeWorker', () => {
  it('is ready again once a worker that crashed before is ready (Kubernetes restarted it)', () => {
    expect(observeWorker('ns/c', deployment(rolled), [pod(true, 2)])).toMatchObject({
      phase: 'ready',
      restarts: 2,
    });
    expect(observeWorker('ns/c', deployment({ ...rolled, readyReplicas: 0 }), [pod(false, 2)])).toMatchObject(
      {
        phase: 'failed',
        message: 'the worker exited with code 1: lost the broker',
      },
    );
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
