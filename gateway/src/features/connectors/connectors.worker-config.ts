import {
  sourceWorkerConfig,
  targetWorkerConfig,
  type ConnectorResource,
  type DataModelResource,
  type SubscriptionResource,
  type WorkerConfig,
} from '@sluice/shared/catalog';
import type { ClusterObject } from '@sluice/shared/ports';
import { workerSecretEnv } from '@sluice/shared/secrets';
import type { Principal } from '../../auth/principal.js';
import { workerSecretScope } from '../../connections/worker-configuration.js';
import type { GatewayContext } from '../../context.js';
import { notFound } from '../../http/errors.js';
import { resourceOf } from '../../mirror/projections.js';
import { mirroredSpecs, subscriptionSwitches, type MirroredSpecTable } from './connectors.repository.js';
import { loadDirected } from './connectors.service.js';

// The mirror keeps each object's spec; the worker configuration is built from
// those copies, the way the operator builds it from the cluster's.

async function specs<T extends ClusterObject>(
  ctx: GatewayContext,
  table: MirroredSpecTable,
  column: 'id' | 'connector_id' | 'target_connector_id',
  value: string,
) {
  const rows = await mirroredSpecs(ctx.db, table, column, value);
  return rows.map((r) => resourceOf<T>(r.id, r.spec));
}

export async function connectorWorkerConfig(
  ctx: GatewayContext,
  p: Principal,
  id: string,
  direction: 'source' | 'target',
): Promise<WorkerConfig> {
  await loadDirected(ctx, p, id, direction);
  const [connector] = await specs<ConnectorResource>(ctx, 'mirror_connectors', 'id', id);
  if (!connector) throw notFound('Connector not found');
  if (direction === 'source') {
    return sourceWorkerConfig(
      connector,
      await specs<DataModelResource>(ctx, 'mirror_datamodels', 'connector_id', id),
    );
  }
  const subs = await specs<SubscriptionResource>(ctx, 'mirror_subscriptions', 'target_connector_id', id);
  // The effective switch (its own or a pipeline's), as the mirror projects it and the operator gives it.
  const enabled = await subscriptionSwitches(ctx.db, id);
  const rows = [];
  for (const s of subs) {
    const on = enabled.get(s.metadata.name) ?? s.spec.enabled;
    const subscription = on === s.spec.enabled ? s : { ...s, spec: { ...s.spec, enabled: on } };
    const [datamodel] = await specs<DataModelResource>(
      ctx,
      'mirror_datamodels',
      'id',
      subscription.spec.datamodelId,
    );
    if (!datamodel) continue;
    const [source] = await specs<ConnectorResource>(
      ctx,
      'mirror_connectors',
      'id',
      datamodel.spec.connectorId,
    );
    if (source) rows.push({ subscription, datamodel, source });
  }
  return targetWorkerConfig(connector, rows);
}

/** An object a subscription joins is gone (or not mirrored yet). */
export class MissingObjectError extends Error {
  override readonly name = 'MissingObjectError';
  constructor(
    readonly kind: 'Subscription' | 'DataModel' | 'Connector',
    readonly id: string,
  ) {
    super(`The ${kind === 'DataModel' ? 'data model' : kind.toLowerCase()} ${id} no longer exists`);
  }
}

/**
 * A subscription with the objects it joins, as the catalog holds them: what
 * the previews and backfills build a target worker's configuration from.
 */
export async function subscriptionObjects(ctx: GatewayContext, id: string) {
  const subscription = await ctx.catalog.get<SubscriptionResource>('Subscription', id);
  if (!subscription) throw new MissingObjectError('Subscription', id);
  const { datamodelId, targetConnectorId } = subscription.spec;
  const datamodel = await ctx.catalog.get<DataModelResource>('DataModel', datamodelId);
  if (!datamodel) throw new MissingObjectError('DataModel', datamodelId);
  const [source, target] = await Promise.all([
    ctx.catalog.get<ConnectorResource>('Connector', datamodel.spec.connectorId),
    ctx.catalog.get<ConnectorResource>('Connector', targetConnectorId),
  ]);
  if (!source) throw new MissingObjectError('Connector', datamodel.spec.connectorId);
  if (!target) throw new MissingObjectError('Connector', targetConnectorId);
  return { subscription, datamodel, source, target };
}

/** The environment a worker gets for its references (the process runtime's and the previews'), granted ones only. */
export async function workerEnvFor(
  ctx: GatewayContext,
  config: WorkerConfig,
): Promise<Record<string, string>> {
  return workerSecretEnv(
    ctx.secretStore,
    ctx.config.workerNamespace,
    config,
    await workerSecretScope(ctx, config),
  );
}
