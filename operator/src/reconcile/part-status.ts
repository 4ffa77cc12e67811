import type { ConnectorResource, DataModelResource, SubscriptionResource } from '@sluice/shared/catalog';
import type { Action } from './actions.js';
import { conditions, statusDiff, type ConditionType, type ConditionValue } from './conditions.js';
import { refOf } from './reconciler.js';

/**
 * The status of a data model or a subscription. They have no state of their
 * own in the spec (3.2: "not shown"); their status says whether they flow:
 * Ready when enabled and the connector that runs them is live, Progressing
 * while it is building, Degraded when it failed; a disabled one is neither
 * (Argo CD shows it Suspended). Their changes reach the worker through the
 * connector's reconcile, which restarts it with the new configuration.
 * The action is the patch of what changed; none when nothing did.
 */
export function partStatusActions(
  object: DataModelResource | SubscriptionResource,
  enabled: boolean,
  connector: ConnectorResource | undefined,
  now: string,
  /** Further status fields the kind's planner owns (a subscription's effective state). */
  extra: Record<string, unknown> = {},
): Action[] {
  const state = connector?.status?.state;
  const name = connector?.spec.name ?? 'its connector';
  let next: Record<ConditionType, ConditionValue>;
  if (!enabled) {
    next = triple('False', 'Disabled', 'Disabled: not delivered', 'False', 'False');
  } else if (!connector) {
    next = triple('False', 'ConnectorMissing', 'Its connector does not exist', 'False', 'True');
  } else if (state === 'live') {
    next = triple('True', 'Flowing', `${name} is live`, 'False', 'False');
  } else if (state === 'error') {
    next = triple(
      'False',
      'ConnectorError',
      `${name}: ${connector.status?.message ?? 'failed'}`,
      'False',
      'True',
    );
  } else if (state === 'building') {
    next = triple('False', 'ConnectorBuilding', `${name} is building`, 'True', 'False');
  } else {
    next = triple('False', 'ConnectorStopped', `${name} is ${state ?? 'paused'}`, 'False', 'False');
  }
  const generation = object.metadata.generation ?? 0;
  const status = {
    observedGeneration: generation,
    conditions: conditions(object.status?.conditions, next, generation, now),
    ...extra,
  };
  const diff = statusDiff(object.status as Record<string, unknown> | undefined, status);
  return diff ? [{ type: 'patchStatus', ref: refOf(object), status: diff }] : [];
}

function triple(
  ready: 'True' | 'False',
  reason: string,
  message: string,
  progressing: 'True' | 'False',
  degraded: 'True' | 'False',
): Record<ConditionType, ConditionValue> {
  return {
    Ready: { status: ready, reason, message },
    Progressing: { status: progressing, reason, message },
    Degraded: { status: degraded, reason, message },
  };
}
