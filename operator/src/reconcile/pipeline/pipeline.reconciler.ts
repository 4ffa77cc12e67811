import type { ConnectorResource, PipelineResource, SubscriptionResource } from '@sluice/shared/catalog';
import type { ObjectRef } from '../actions.js';
import { objectRef, type Reconciler } from '../reconciler.js';
import { planPipeline } from './pipeline.plan.js';

/**
 * The Pipeline (spec 3.1): its plan reads its connectors and subscription,
 * whose effective state it decides, so a change to it queues them (a
 * deleted pipeline no longer counts for them either).
 */
export function pipelineReconciler(options: { slotWalDegradedBytes: number }): Reconciler<PipelineResource> {
  return {
    kind: 'Pipeline',
    references: parts,
    dependents: parts,
    reconcile(ref, pipeline, { cache, now }) {
      if (!pipeline) return undefined;
      const { namespace: ns } = ref;
      return planPipeline({
        pipeline,
        source: cache.get<ConnectorResource>('Connector', ns, pipeline.spec.sourceConnectorId),
        target: cache.get<ConnectorResource>('Connector', ns, pipeline.spec.targetConnectorId),
        subscription: cache.get<SubscriptionResource>('Subscription', ns, pipeline.spec.subscriptionId),
        slotWalDegradedBytes: options.slotWalDegradedBytes,
        now,
      });
    },
  };
}

/** Its source and target connectors and its subscription. */
function parts(p: PipelineResource): ObjectRef[] {
  const ns = p.metadata.namespace;
  return [
    objectRef('Connector', ns, p.spec.sourceConnectorId),
    objectRef('Connector', ns, p.spec.targetConnectorId),
    objectRef('Subscription', ns, p.spec.subscriptionId),
  ];
}
