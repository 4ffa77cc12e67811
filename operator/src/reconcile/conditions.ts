import { isDeepStrictEqual } from 'node:util';
import type { Condition } from '@sluice/shared/catalog';

export type ConditionType = 'Ready' | 'Progressing' | 'Degraded';
export type ConditionValue = { status: 'True' | 'False' | 'Unknown'; reason: string; message: string };

/**
 * The three conditions in Kubernetes' convention, keeping each one's
 * lastTransitionTime while its status does not change (so a resync rewrites
 * nothing), and stamping `observedGeneration`.
 */
export function conditions(
  previous: readonly Condition[] | undefined,
  next: Record<ConditionType, ConditionValue>,
  generation: number,
  now: string,
): Condition[] {
  return (Object.entries(next) as [ConditionType, ConditionValue][]).map(([type, value]) => {
    const before = previous?.find((c) => c.type === type);
    return {
      type,
      ...value,
      lastTransitionTime: before && before.status === value.status ? before.lastTransitionTime : now,
      observedGeneration: generation,
    };
  });
}

/** Conditions of a state: live is Ready; error is Degraded; building and stopping progress. */
export function stateConditions(state: string, message: string): Record<ConditionType, ConditionValue> {
  const reason = state.charAt(0).toUpperCase() + state.slice(1);
  const busy = state === 'building' || state === 'stopping';
  return {
    Ready: { status: state === 'live' ? 'True' : 'False', reason, message },
    Progressing: { status: busy ? 'True' : 'False', reason, message },
    Degraded: { status: state === 'error' ? 'True' : 'False', reason, message },
  };
}

/**
 * The merge patch from `current` to `next`: the fields that differ (deeply:
 * the API server may order keys differently), a field `next` leaves
 * undefined sent as null so that it is cleared; undefined when nothing
 * differs, so a converged object writes nothing.
 */
export function statusDiff(
  current: Record<string, unknown> | undefined,
  next: Record<string, unknown>,
): Record<string, unknown> | undefined {
  const diff: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(next)) {
    if (!isDeepStrictEqual(current?.[key] ?? undefined, value)) diff[key] = value ?? null;
  }
  return Object.keys(diff).length > 0 ? diff : undefined;
}
