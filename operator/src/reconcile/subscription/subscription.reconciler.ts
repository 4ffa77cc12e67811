import type { ConnectorResource, PipelineResource, SubscriptionResource } from '@sluice/shared/catalog';
import { objectRef, refOf, type Reconciler } from '../reconciler.js';
import { planSubscription } from './subscription.plan.js';

/**
 * The Subscription: its plan reads its target connector and the pipelines
 * that use it (its effective state). A change to it queues its target
 * (whose worker's configuration holds it) and those pipelines.
 */
export const subscriptionReconciler: Reconciler<SubscriptionResource> = {
  kind: 'Subscription',
  references: (s) => [
    objectRef('Connector', s.metadata.namespace, s.spec.targetConnectorId),
    objectRef('DataModel', s.metadata.namespace, s.spec.datamodelId),
  ],
  dependents: (s, cache) => [
    objectRef('Connector', s.metadata.namespace, s.spec.targetConnectorId),
    ...cache.referencing<PipelineResource>('Pipeline', refOf(s)).map(refOf),
  ],
  reconcile: (ref, s, { cache, now }) =>
    s &&
    planSubscription(
      s,
      cache.get<ConnectorResource>('Connector', ref.namespace, s.spec.targetConnectorId),
      now,
      cache.referencing<PipelineResource>('Pipeline', ref),
    ),
};
