import { workerSecretOwners, type WorkerConfig } from '@sluice/shared/catalog';
import type { SecretScope } from '@sluice/shared/ports';
import { resolveSecretValues } from '@sluice/shared/secrets';
import { teamSecretScope } from '../catalog/secrets.js';
import type { GatewayContext } from '../context.js';

// A worker configuration as the gateway uses it itself (previews, backfills):
// its references resolved from the secret store in the scope a worker of it
// would have, so the gateway reaches exactly what the worker would.

/**
 * The scope a worker's references are checked in (docs/security.md, "Secret
 * references"): its owners (`workerSecretOwners`) with their teams'
 * environments.
 */
export async function workerSecretScope(ctx: GatewayContext, config: WorkerConfig): Promise<SecretScope> {
  const { teamIds, ownSecrets } = await workerSecretOwners(config, (kind, id) => ctx.catalog.get(kind, id));
  return teamSecretScope(ctx, teamIds, ownSecrets);
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
