import type { Condition } from '@sluice/shared';
import type { Action, ObjectRef } from './actions.js';
import { conditions, stateConditions, statusDiff } from './conditions.js';

/**
 * The status of a kind with a state machine (connector, pipeline): state,
 * message, observedGeneration and the three conditions; the actions are the
 * patch of what changed and, when the state changed, its Event.
 */
export function stateStatusActions(
  ref: ObjectRef,
  current: { state?: string; conditions?: Condition[] } | undefined,
  state: string,
  message: string,
  generation: number,
  now: string,
): Action[] {
  const diff = statusDiff(current as Record<string, unknown> | undefined, {
    state,
    message: message || undefined,
    observedGeneration: generation,
    conditions: conditions(current?.conditions, stateConditions(state, message), generation, now),
  });
  if (!diff) return [];
  const actions: Action[] = [{ type: 'patchStatus', ref, status: diff }];
  if (diff.state !== undefined) actions.push(transitionEvent(ref, current?.state, state, message));
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
