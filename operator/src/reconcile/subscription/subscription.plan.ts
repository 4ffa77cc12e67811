import {
  effectiveSubscriptionState,
  type ConnectorResource,
  type PipelineResource,
  type SubscriptionResource,
} from '@sluice/shared/catalog';
import type { Plan } from '../actions.js';
import { partStatusActions } from '../part-status.js';

/**
 * A subscription flows when it is enabled and its target connector is live
 * (part-status.ts). Whether it is enabled is its effective state: its own
 * switch and the pipelines that use it (effective-state.ts), shown with the
 * reason in its status.
 */
export function planSubscription(
  s: SubscriptionResource,
  target: ConnectorResource | undefined,
  now: string,
  /** The pipelines that use it. */
  pipelines: readonly PipelineResource[] = [],
): Plan {
  if (s.metadata.deletionTimestamp) return { actions: [] };
  const effective = effectiveSubscriptionState(s, pipelines);
  return {
    actions: partStatusActions(s, effective.state === 'enabled', target, now, {
      effectiveState: effective.state,
      effectiveReason: effective.reason,
    }),
  };
}
