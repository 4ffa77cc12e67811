import type { Condition } from '@sluice/shared/catalog';
import type { Action, ObjectRef } from './actions.js';
import { conditions, stateConditions, statusDiff, type ConditionValue } from './conditions.js';

/**
 * The status of a kind with a state machine (connector, pipeline): state,
 * message, observedGeneration and the three conditions; the actions are the
 * patch of what changed and, when the state changed, its Event. `degraded`
 * (a replication slot retaining too much WAL) makes Degraded true in any
 * state but `error`, whose own Degraded says more; its Event is a Warning.
 */
export function stateStatusActions(
  ref: ObjectRef,
  current: { state?: string; conditions?: Condition[] } | undefined,
  state: string,
  message: string,
  generation: number,
  now: string,
  degraded?: ConditionValue,
  /** Further status fields the kind's planner owns (a connector's effective state). */
  extra: Record<string, unknown> = {},
): Action[] {
  const next = stateConditions(state, message);
  if (degraded && state !== 'error') next.Degraded = degraded;
  const diff = statusDiff(current as Record<string, unknown> | undefined, {
    state,
    message: message || undefined,
    observedGeneration: generation,
    conditions: conditions(current?.conditions, next, generation, now),
    ...extra,
  });
  if (!diff) return [];
  const actions: Action[] = [{ type: 'patchStatus', ref, status: diff }];
  if (diff.state !== undefined) actions.push(transitionEvent(ref, current?.state, state, message));
  const before = current?.conditions?.find((c) => c.type === 'Degraded');
  if (degraded && state !== 'error' && (before?.status !== 'True' || before.reason !== degraded.reason)) {
    actions.push({
      type: 'event',
      ref,
      eventType: 'Warning',
      reason: degraded.reason,
      message: degraded.message,
    });
  }
  return actions;
}

/** The Event of a state change: a Warning when it ends in error. */
export function transitionEvent(
  ref: ObjectRef,
  from: string | undefined,
  to: string,
  message: string,
): Action {
  return {
    type: 'event',
    ref,
    eventType: to === 'error' ? 'Warning' : 'Normal',
    reason: to.charAt(0).toUpperCase() + to.slice(1),
    message: `${from ?? 'new'} → ${to}${message ? `: ${message}` : ''}`,
  };
}
