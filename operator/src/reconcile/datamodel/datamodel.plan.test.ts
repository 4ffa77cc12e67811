import { describe, expect, it } from '@jest/globals';
import { connector, id, NOW, status } from '../../../test/plan-fixtures.js';
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
});
