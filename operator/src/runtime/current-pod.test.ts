import { describe, expect, it } from '@jest/globals';
import type { V1Pod } from '@kubernetes/client-node';
import { currentPod } from './deployment-workers.js';
import { CONFIG_HASH_ANNOTATION } from './worker-deployment.js';

const pod = (name: string, created: string, hash: string, more: Partial<V1Pod['metadata']> = {}): V1Pod => ({
  metadata: {
    name,
    creationTimestamp: created as unknown as Date,
    annotations: { [CONFIG_HASH_ANNOTATION]: hash },
    ...more,
  },
  spec: { nodeName: 'node-1', containers: [] },
});

describe("the pod whose log is a worker's", () => {
  it('prefers the current configuration over a replaced pod created in the same second', () => {
    const old = pod('old', '2026-11-23T10:00:00Z', 'aaa');
    const current = pod('new', '2026-11-23T10:00:00Z', 'bbb');
    expect(currentPod([current, old], 'bbb')?.metadata?.name).toBe('new');
    expect(currentPod([old, current], 'bbb')?.metadata?.name).toBe('new');
  });

  it('leaves out a pod being deleted when another runs, and unscheduled pods always', () => {
    const leaving = pod('leaving', '2026-11-23T10:00:05Z', 'bbb', {
      deletionTimestamp: '2026-11-23T10:00:06Z' as unknown as Date,
    });
    const staying = pod('staying', '2026-11-23T10:00:00Z', 'bbb');
    const pending: V1Pod = { ...pod('pending', '2026-11-23T10:00:09Z', 'bbb'), spec: { containers: [] } };
    expect(currentPod([leaving, staying, pending], 'bbb')?.metadata?.name).toBe('staying');
    expect(currentPod([leaving], 'bbb')?.metadata?.name).toBe('leaving');
    expect(currentPod([pending], 'bbb')).toBeUndefined();
  });

  it('takes the newest when no configuration tells them apart', () => {
    const a = pod('a', '2026-11-23T10:00:00Z', 'x');
    const b = pod('b', '2026-11-23T10:00:07Z', 'y');
    expect(currentPod([a, b], undefined)?.metadata?.name).toBe('b');
  });
});
