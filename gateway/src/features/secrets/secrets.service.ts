import {
  MANAGED_SECRET_LABEL,
  MANAGED_SECRET_PREFIX,
  type WorkerSecretCreate,
  type WorkerSecretRead,
  type SecretSummary,
} from '@sluice/shared';
import { requireSuperuser } from '../../auth/access.js';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import { conflict, notFound } from '../../http/errors.js';

// Spec 2.14 and 4.8: the Secrets of the worker namespace that secret fields
// may reference. The store holds the SQL (embedded adapter) or talks to the
// cluster; this file holds the rules. No function here returns a value.

const isManaged = (labels: Record<string, string>) => labels[MANAGED_SECRET_LABEL] === 'true';

function toRead(s: Pick<SecretSummary, 'name' | 'keys' | 'labels'>): WorkerSecretRead {
  return { name: s.name, keys: [...s.keys].sort(), managed: isManaged(s.labels) };
}

/** Any authenticated user: names and keys are what a `valueFrom` reference needs, and hold no value. */
export async function listSecrets(ctx: GatewayContext): Promise<WorkerSecretRead[]> {
  const all = await ctx.secretStore.list(ctx.config.namespace);
  return all.map(toRead);
}

/** Superusers only: creates or replaces a user secret of the embedded store. */
export async function putSecret(
  ctx: GatewayContext,
  p: Principal,
  body: WorkerSecretCreate,
): Promise<WorkerSecretRead> {
  requireSuperuser(p);
  if (ctx.secretStore.adapter !== 'embedded') {
    throw conflict(
      'With the kubernetes adapter, create Secrets in the worker namespace with the cluster tools',
    );
  }
  if (body.name.startsWith(MANAGED_SECRET_PREFIX)) {
    throw conflict(`Names starting with "${MANAGED_SECRET_PREFIX}" are reserved for secrets Sluice manages`);
  }
  const existing = await ctx.secretStore.get(ctx.config.namespace, body.name);
  if (existing && isManaged(existing.labels)) {
    throw conflict(`Secret "${body.name}" is managed by Sluice`);
  }
  await ctx.secretStore.put(ctx.config.namespace, body.name, body.data, {});
  return toRead({ name: body.name, keys: Object.keys(body.data), labels: {} });
}

/** Superusers only; a managed secret goes away with the resource that owns it, not through this call. */
export async function deleteSecret(ctx: GatewayContext, p: Principal, name: string): Promise<void> {
  requireSuperuser(p);
  const existing = await ctx.secretStore.get(ctx.config.namespace, name);
  if (!existing) throw notFound('Secret not found');
  if (isManaged(existing.labels)) {
    throw conflict(`Secret "${name}" is managed by Sluice: it is deleted with the resource that owns it`);
  }
  await ctx.secretStore.delete(ctx.config.namespace, name);
}
