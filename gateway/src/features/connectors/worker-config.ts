import {
  sourceWorkerConfig,
  targetWorkerConfig,
  type ConnectorResource,
  type DataModelResource,
  type SubscriptionResource,
  type WorkerConfig,
} from '@sluice/shared';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import { notFound } from '../../http/errors.js';
import { loadDirected } from './connectors.service.js';

// The mirror keeps each object's spec; the worker configuration is built from
// those copies, the way the operator builds it from the cluster's.

async function specs<T>(
  ctx: GatewayContext,
  table: 'mirror_datamodels' | 'mirror_subscriptions' | 'mirror_connectors',
  column: string,
  value: string,
) {
  const rows = await ctx.db
    .selectFrom(table)
    .select(['id', 'spec'])
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    .where(column as any, '=', value)
    .where('deleting', '=', false)
    .orderBy('created_at')
    .execute();
  return rows.map((r) => ({ metadata: { name: r.id }, spec: r.spec }) as unknown as T);
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
  const rows = [];
  for (const subscription of subs) {
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
