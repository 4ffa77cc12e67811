import {
  effectiveConnectorState,
  effectiveSubscriptionState,
  type ConnectorResource,
  type PipelineResource,
  type SubscriptionResource,
} from '@sluice/shared/catalog';
import type { GatewayContext } from '../../context.js';
import { pipelineIdsUsing } from './pipelines.repository.js';

// The effective state of a pipeline's part (shared/src/catalog/effective-state.ts)
// right after a start, stop or switch of the part, as the operator will write
// it: the API shows the new state at once, in the operator's own words.

/** The pipelines that use a part, read from the cluster (their annotations decide). */
async function pipelinesUsing(
  ctx: GatewayContext,
  part: { connectorId: string } | { subscriptionId: string },
): Promise<PipelineResource[]> {
  const ids = await pipelineIdsUsing(ctx.db, part);
  const found = await Promise.all(ids.map((id) => ctx.catalog.get<PipelineResource>('Pipeline', id)));
  return found.filter((p) => p !== undefined);
}

/** `status.effectiveState` and `effectiveReason` of a connector. */
export async function connectorEffectiveStatus(ctx: GatewayContext, c: ConnectorResource) {
  const e = effectiveConnectorState(c, await pipelinesUsing(ctx, { connectorId: c.metadata.name }));
  return { effectiveState: e.state, effectiveReason: e.reason };
}

/** `status.effectiveState` and `effectiveReason` of a subscription. */
export async function subscriptionEffectiveStatus(ctx: GatewayContext, s: SubscriptionResource) {
  const e = effectiveSubscriptionState(s, await pipelinesUsing(ctx, { subscriptionId: s.metadata.name }));
  return { effectiveState: e.state, effectiveReason: e.reason };
}
