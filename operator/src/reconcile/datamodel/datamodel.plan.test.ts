import { describe, expect, it } from '@jest/globals';
import { connector, datamodel, id, NOW, status } from '../../../test/plan-fixtures.js';
import { planDataModel } from './datamodel.plan.js';

describe('planDataModel', () => {
  it('is Ready when enabled and its connector is live, Degraded when it failed, neither when disabled', () => {
    const dm = {
      kind: 'DataModel',
      metadata: { name: id(2), namespace: 'ns', generation: 1 },
      spec: { enabled: true },
    } as never;
    const ready = (s: ReturnType<typeof status>) =>
      (s?.conditions as { type: string; status: string }[]).map((c) => `${c.type}=${c.status}`);
    expect(ready(status(planDataModel(dm, { ...connector(), status: { state: 'live' } }, NOW)))).toEqual([
      'Ready=True',
      'Progressing=False',
      'Degraded=False',
    ]);
    expect(
      ready(status(planDataModel(dm, { ...connector(), status: { state: 'error', message: 'x' } }, NOW))),
    ).toEqual(['Ready=False', 'Progressing=False', 'Degraded=True']);
    const off = {
      kind: 'DataModel',
      metadata: { name: id(2), namespace: 'ns', generation: 1 },
      spec: { enabled: false },
    } as never;
    expect(ready(status(planDataModel(off, connector(), NOW)))).toEqual([
      'Ready=False',
      'Progressing=False',
      'Degraded=False',
    ]);
  });

  it('deletes a data model whose owning connector is gone, once the cluster confirms it; one never owned stays', () => {
    const owner = { apiVersion: 'sluice.dev/v1alpha1', kind: 'Connector', name: id(1), uid: 'u1' };
    const owned = datamodel({}, { ownerReferences: [owner] });
    expect(planDataModel(owned, undefined, NOW).actions).toEqual([
      {
        type: 'delete',
        ref: { kind: 'DataModel', namespace: 'ns', name: id(2) },
        ifGone: { kind: 'Connector', namespace: 'ns', name: id(1) },
      },
    ]);
    // Applied before its connector (GitOps in any order): no ownerReference yet, so it waits.
    expect(planDataModel(datamodel(), undefined, NOW).actions.map((a) => a.type)).toEqual(['patchStatus']);
    // Its connector there (a new one of that name adopts it): not deleted.
    const present = planDataModel(owned, connector({}, { uid: 'u2' }), NOW).actions;
    expect(present.some((a) => a.type === 'delete')).toBe(false);
    // Already being deleted: nothing to do.
    const deleting = datamodel({}, { ownerReferences: [owner], deletionTimestamp: NOW });
    expect(planDataModel(deleting, undefined, NOW).actions).toEqual([]);
  });
});
