import type { ConnectorResource, DataModelResource, SubscriptionResource } from '@sluice/shared/catalog';
import { objectRef, refOf, type Reconciler } from '../reconciler.js';
import { planDataModel } from './datamodel.plan.js';

/**
 * The DataModel: its plan reads its connector. A change to it queues its
 * connector (whose source worker's configuration holds it) and the targets
 * of the subscriptions reading it.
 */
export const dataModelReconciler: Reconciler<DataModelResource> = {
  kind: 'DataModel',
  references: (d) => [objectRef('Connector', d.metadata.namespace, d.spec.connectorId)],
  dependents: (d, cache) => [
    objectRef('Connector', d.metadata.namespace, d.spec.connectorId),
    ...cache
      .referencing<SubscriptionResource>('Subscription', refOf(d))
      .map((s) => objectRef('Connector', s.metadata.namespace, s.spec.targetConnectorId)),
  ],
  reconcile: (ref, d, { cache, now }) =>
    d && planDataModel(d, cache.get<ConnectorResource>('Connector', ref.namespace, d.spec.connectorId), now),
};
