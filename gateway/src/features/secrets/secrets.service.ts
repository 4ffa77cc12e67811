import { MANAGED_SECRET_LABEL, MANAGED_SECRET_PREFIX, type SecretSummary } from '@sluice/shared/ports';
import { type WorkerSecretCreate, type WorkerSecretRead } from '@sluice/shared/schemas';
import { grantAnnotations, grantOf, isControlPlaneSecret, isSecretUsable } from '@sluice/shared/secrets';
import { requireSuperuser } from '../../auth/access.js';
import type { Principal } from '../../auth/principal.js';
import { callerSecretScope } from '../../catalog/secrets.js';
import type { GatewayContext } from '../../context.js';
import { conflict, notFound, unprocessable, type ValidationIssue } from '../../http/errors.js';
import { placesOfUser, unknownEnvs, unknownTeams } from './secrets.repository.js';

// Spec 2.14 and 4.8: the Secrets of the worker namespace that secret fields
// may reference, and who may (docs/security.md, "Secret references"). The
// store holds the SQL (embedded adapter) or talks to the cluster; the rule
// of use is `isSecretUsable` of shared/secrets; this file holds the routes'
// rules. No function here returns a value.

const isManaged = (labels: Record<string, string>) => labels[MANAGED_SECRET_LABEL] === 'true';

function toRead(s: Pick<SecretSummary, 'name' | 'keys' | 'labels' | 'annotations'>, withGrant: boolean) {
  const read: WorkerSecretRead = { name: s.name, keys: [...s.keys].sort(), managed: isManaged(s.labels) };
  if (withGrant) {
    const grant = grantOf(s);
    read.allowed_team_ids = grant.teamIds;
    read.allowed_env_ids = grant.envIds;
  }
  return read;
}

/**
 * The secrets the caller may reference: those granted to one of the teams
 * they act for (or to the environment of one). A superuser sees every
 * secret usable by someone (granted to a team or environment, or managed by
 * Sluice for an object), with its grant. Never the control plane's own.
 */
export async function listSecrets(ctx: GatewayContext, p: Principal): Promise<WorkerSecretRead[]> {
  const all = await ctx.secretStore.list(ctx.config.workerNamespace);
  const scope = await callerSecretScope(ctx, p);
  const su = p.user.is_superuser;
  return all
    .filter((s) => isSecretUsable(s, scope) || (su && isManaged(s.labels) && !isControlPlaneSecret(s)))
    .map((s) => toRead(s, su));
}

/** The grant of a write: the one given (every id must exist), else the kept or the default one. */
async function grantFor(
  ctx: GatewayContext,
  p: Principal,
  body: WorkerSecretCreate,
  existing: Record<string, string> | undefined,
): Promise<Record<string, string>> {
  const teams = body.allowed_team_ids;
  const envs = body.allowed_env_ids;
  if (teams === undefined && envs === undefined) {
    if (existing) return grantAnnotations(grantOf({ annotations: existing }));
    const places = await placesOfUser(ctx.db, p.user.id);
    return grantAnnotations({ teamIds: places.map((t) => t.teamId), envIds: [] });
  }
  const issues: ValidationIssue[] = [];
  for (const [field, ids, unknown] of [
    ['allowed_team_ids', teams ?? [], await unknownTeams(ctx.db, teams ?? [])],
    ['allowed_env_ids', envs ?? [], await unknownEnvs(ctx.db, envs ?? [])],
  ] as const) {
    for (const id of unknown) {
      issues.push({
        loc: ['body', field, ids.indexOf(id)],
        msg: `No such ${field === 'allowed_team_ids' ? 'team' : 'environment'}`,
        type: 'value_error',
      });
    }
  }
  if (issues.length > 0) throw unprocessable(issues);
  return grantAnnotations({ teamIds: [...(teams ?? [])], envIds: [...(envs ?? [])] });
}

/** Superusers only: creates or replaces a user secret of the embedded store, with its grant. */
export async function putSecret(
  ctx: GatewayContext,
  p: Principal,
  body: WorkerSecretCreate,
): Promise<WorkerSecretRead> {
  requireSuperuser(p);
  if (ctx.secretStore.adapter !== 'embedded') {
    throw conflict(
      'With the kubernetes adapter, create Secrets in the worker namespace with the cluster tools ' +
        '(and grant them with the sluice.dev/allowed-teams or sluice.dev/allowed-envs annotation)',
    );
  }
  if (body.name.startsWith(MANAGED_SECRET_PREFIX)) {
    throw conflict(`Names starting with "${MANAGED_SECRET_PREFIX}" are reserved for secrets Sluice manages`);
  }
  const existing = await ctx.secretStore.get(ctx.config.workerNamespace, body.name);
  if (existing && isManaged(existing.labels)) {
    throw conflict(`Secret "${body.name}" is managed by Sluice`);
  }
  if (existing && isControlPlaneSecret(existing)) {
    throw conflict(`Secret "${body.name}" belongs to Sluice's control plane`);
  }
  const annotations = await grantFor(ctx, p, body, existing?.annotations);
  await ctx.secretStore.put(ctx.config.workerNamespace, body.name, body.data, { annotations });
  return toRead({ name: body.name, keys: Object.keys(body.data), labels: {}, annotations }, true);
}

/** Superusers only; a managed secret goes away with the resource that owns it, the control plane's never. */
export async function deleteSecret(ctx: GatewayContext, p: Principal, name: string): Promise<void> {
  requireSuperuser(p);
  const existing = await ctx.secretStore.get(ctx.config.workerNamespace, name);
  if (!existing) throw notFound('Secret not found');
  if (isManaged(existing.labels)) {
    throw conflict(`Secret "${name}" is managed by Sluice: it is deleted with the resource that owns it`);
  }
  if (isControlPlaneSecret(existing)) {
    throw conflict(`Secret "${name}" belongs to Sluice's control plane`);
  }
  await ctx.secretStore.delete(ctx.config.workerNamespace, name);
}
