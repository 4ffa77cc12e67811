import {
  effectiveSubscriptionState,
  type ConnectorResource,
  type DataModelResource,
  type PipelineResource,
  type SubscriptionResource,
} from '@sluice/shared';
import type { Action, Plan } from './actions.js';
import { conditions, statusDiff, type ConditionType, type ConditionValue } from './conditions.js';

/**
 * Data models and subscriptions have no state of their own in the spec
 * (3.2: "not shown"); their status says whether they flow: Ready when
 * enabled and the connector that runs them is live, Progressing while it is
 * building, Degraded when it failed; a disabled one is neither (Argo CD shows
 * it Suspended). A subscription is enabled by its effective state (its own
 * switch and the pipelines that use it, effective-state.ts), shown with its
 * reason in its status. Their changes reach the worker through the
 * connector's reconcile, which restarts it with the new configuration.
 *
 * A data model is owned by its connector (an ownerReference, metadata the
 * operator sets whoever created it), so that the garbage collector deletes
 * it with the connector, as the gateway's delete does.
 */
export function planPart(
  object: DataModelResource | SubscriptionResource,
  connector: ConnectorResource | undefined,
  now: string,
  /** For a subscription: the pipelines that use it. */
  pipelines: readonly PipelineResource[] = [],
): Plan {
  if (object.metadata.deletionTimestamp) return { actions: [] };
  const state = connector?.status?.state;
  const name = connector?.spec.name ?? 'its connector';
  const effective =
    object.kind === 'Subscription' ? effectiveSubscriptionState(object, pipelines) : undefined;
  const enabled = effective ? effective.state === 'enabled' : object.spec.enabled;
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
    ...(effective ? { effectiveState: effective.state, effectiveReason: effective.reason } : {}),
  };
  const ref = { kind: object.kind, namespace: object.metadata.namespace, name: object.metadata.name };
  const actions: Action[] = [];
  if (object.kind === 'DataModel' && connector?.metadata.uid) {
    const owners = ownerReferences(object, connector);
    if (owners) actions.push({ type: 'patch', ref, patch: { metadata: { ownerReferences: owners } } });
  }
  const diff = statusDiff(object.status as Record<string, unknown> | undefined, status);
  if (diff) actions.push({ type: 'patchStatus', ref, status: diff });
  return { actions };
}

/**
 * The data model's ownerReferences with one to its connector (replacing one
 * to an earlier connector of that name); undefined when it already has it.
 */
function ownerReferences(
  d: DataModelResource,
  c: ConnectorResource,
): NonNullable<DataModelResource['metadata']['ownerReferences']> | undefined {
  const current = d.metadata.ownerReferences ?? [];
  if (current.some((o) => o.kind === 'Connector' && o.uid === c.metadata.uid)) return undefined;
  return [
    ...current.filter((o) => !(o.kind === 'Connector' && o.name === c.metadata.name)),
    { apiVersion: c.apiVersion, kind: 'Connector', name: c.metadata.name, uid: c.metadata.uid as string },
  ];
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
