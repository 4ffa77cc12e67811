import type { ConnectorResource, DataModelResource, WorkerConfig } from '@sluice/shared/catalog';
import type { SecretScope } from '@sluice/shared/ports';
import { resolveSecretValues } from '@sluice/shared/secrets';
import { managedSecretName, teamSecretScope } from '../catalog/secrets.js';
import type { GatewayContext } from '../context.js';

// A worker configuration as the gateway uses it itself (previews, backfills):
// its references resolved from the secret store in the scope a worker of it
// would have, so the gateway reaches exactly what the worker would.

/**
 * The scope a worker's references are checked in (docs/security.md, "Secret
 * references"): the teams of its connector and of the sources whose streams
 * it reads, and the managed secrets of those connectors and of its
 * subscriptions — the objects whose configurations it was built from.
 */
export async function workerSecretScope(ctx: GatewayContext, config: WorkerConfig): Promise<SecretScope> {
  const teams = new Set<string>();
  const own = new Set<string>();
  const addConnector = async (id: string) => {
    const c = await ctx.catalog.get<ConnectorResource>('Connector', id);
    if (!c) return;
    teams.add(c.spec.teamId);
    own.add(managedSecretName('connector', id));
  };
  await addConnector(config.connector_id);
  for (const sub of config.subscriptions ?? []) {
    own.add(managedSecretName('subscription', sub.id));
    const dm = await ctx.catalog.get<DataModelResource>('DataModel', sub.datamodel_id);
    if (dm) await addConnector(dm.spec.connectorId);
  }
  return teamSecretScope(ctx, [...teams], [...own]);
}

/**
 * A worker configuration with its `valueFrom` references replaced by their
 * values from the secret store, in memory only (never logged); a missing or
 * ungranted secret throws MissingSecretError, which names the reference, not
 * a value.
 */
export async function resolvedWorkerConfig(ctx: GatewayContext, config: WorkerConfig): Promise<WorkerConfig> {
  const scope = await workerSecretScope(ctx, config);
  return resolveSecretValues(ctx.secretStore, ctx.config.workerNamespace, config, scope);
}
