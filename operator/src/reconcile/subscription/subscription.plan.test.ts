import { describe, expect, it } from '@jest/globals';
import {
  applied,
  connector,
  id,
  NOW,
  pipeline,
  status,
  subscription,
  types,
} from '../../../test/plan-fixtures.js';
import { planSubscription } from './subscription.plan.js';

// A subscription's status: whether it flows (its target connector's state)
// and its effective state (its own switch and the pipelines that use it).

const target = (state?: 'live' | 'building' | 'error' | 'paused') => ({
  ...connector({ name: 'wh', connectorType: 'KAFKA_TARGET' }, { name: id(4) }),
  ...(state ? { status: { state, ...(state === 'error' ? { message: 'no route to host' } : {}) } } : {}),
});
const conditions = (plan: ReturnType<typeof planSubscription>) =>
  (status(plan)?.conditions as { type: string; status: string; reason: string }[]).map(
    (c) => `${c.type}=${c.status}:${c.reason}`,
  );

describe('planSubscription', () => {
  it('is Ready when enabled and its target is live; a second look plans nothing', () => {
    const s = subscription();
    const plan = planSubscription(s, target('live'), NOW);
    expect(types(plan)).toEqual(['patchStatus']);
    expect(status(plan)).toMatchObject({
      observedGeneration: 1,
      effectiveState: 'enabled',
      effectiveReason: 'Its spec enables it',
    });
    expect(conditions(plan)).toEqual([
      'Ready=True:Flowing',
      'Progressing=False:Flowing',
      'Degraded=False:Flowing',
    ]);
    expect(planSubscription(applied(s, plan), target('live'), '2026-11-23T13:00:00Z').actions).toEqual([]);
  });

  it('follows its target: Progressing while it builds, Degraded with its message when it failed or is missing', () => {
    expect(conditions(planSubscription(subscription(), target('building'), NOW))).toContain(
      'Progressing=True:ConnectorBuilding',
    );
    const failed = planSubscription(subscription(), target('error'), NOW);
    expect(conditions(failed)).toContain('Degraded=True:ConnectorError');
    expect(JSON.stringify(status(failed))).toContain('wh: no route to host');
    expect(conditions(planSubscription(subscription(), undefined, NOW))).toContain(
      'Degraded=True:ConnectorMissing',
    );
  });

  it('disabled by its spec is neither Ready nor Degraded, unless a running pipeline delivers it', () => {
    const off = subscription({ enabled: false });
    const disabled = planSubscription(off, target('live'), NOW);
    expect(status(disabled)).toMatchObject({
      effectiveState: 'disabled',
      effectiveReason: 'Its spec disables it',
    });
    expect(conditions(disabled)).toEqual([
      'Ready=False:Disabled',
      'Progressing=False:Disabled',
      'Degraded=False:Disabled',
    ]);
    const delivered = planSubscription(off, target('live'), NOW, [pipeline()]);
    expect(status(delivered)).toMatchObject({
      effectiveState: 'enabled',
      effectiveReason: 'Enabled by pipeline orders-copy',
    });
    expect(conditions(delivered)).toContain('Ready=True:Flowing');
  });

  it('leaves a subscription being deleted alone', () => {
    expect(planSubscription(subscription({}, { deletionTimestamp: NOW }), target('live'), NOW)).toEqual({
      actions: [],
    });
  });
});
