import { isSecretRef } from '@sluice/shared/connectors';
import {
  MANAGED_SECRET_LABEL,
  SecretNotFoundError,
  SecretNotGrantedError,
  type ClusterObject,
  type SecretScope,
  type SluiceKind,
} from '@sluice/shared/ports';
import type { Principal } from '../auth/principal.js';
import type { GatewayContext } from '../context.js';
import { placesOfTeams, placesOfUser } from '../features/secrets/secrets.repository.js';
import type { ValidationIssue } from '../http/errors.js';
import type { Step } from './store.js';

// The managed secret of a catalog object (spec 2.14): `managedSecretName` in
// shared (the operator deletes a connector's too).
export { managedSecretName } from '@sluice/shared/ports';

/**
 * The scope a reference of an object of `teamId` is checked in
 * (docs/security.md, "Secret references"): the team, its environment, and
 * the managed secrets of the objects whose configuration holds it.
 */
export async function teamSecretScope(
  ctx: Pick<GatewayContext, 'db'>,
  teamIds: readonly string[],
  ownSecrets: readonly string[],
): Promise<SecretScope> {
  const places = await placesOfTeams(ctx.db, teamIds);
  return {
    // A team being deleted (its row gone first) keeps its grants until its objects are cleaned up.
    teamIds: [...new Set(teamIds)],
    envIds: [...new Set(places.map((t) => t.envId))],
    ownSecrets,
  };
}

/**
 * The scope of a caller acting for no object (a pre-flight without a
 * connector, the listing of GET /k8s-secrets): every team they act for; a
 * superuser, any secret granted to someone.
 */
export async function callerSecretScope(ctx: GatewayContext, p: Principal): Promise<SecretScope> {
  const places = await placesOfUser(ctx.db, p.user.id);
  return {
    teamIds: places.map((t) => t.teamId),
    envIds: [...new Set(places.map((t) => t.envId))],
    ownSecrets: [],
    ...(p.user.is_superuser ? { anyGrant: true } : {}),
  };
}

/**
 * 422 items for `valueFrom` references (at `loc`) that `scope` may not use
 * (not granted, the control plane's, another object's managed secret, or
 * missing: one message for all, so a caller never learns whether a secret
 * it may not use exists) or whose key is missing: a worker could not start
 * with them. References to the object's own managed secret are ours and
 * skipped (it may not exist before the write).
 */
export async function missingReferences(
  ctx: GatewayContext,
  values: { loc: (string | number)[]; value: unknown }[],
  scope: SecretScope,
): Promise<ValidationIssue[]> {
  const issues: ValidationIssue[] = [];
  for (const { loc, value } of values) {
    if (!isSecretRef(value)) continue;
    const ref = value.valueFrom.secretKeyRef;
    if (scope.ownSecrets.includes(ref.name)) continue;
    try {
      await ctx.secretStore.resolve(ctx.config.workerNamespace, ref, scope);
    } catch (e) {
      if (!(e instanceof SecretNotFoundError)) throw e;
      issues.push({ loc, msg: referenceMessage(e), type: 'value_error' });
    }
  }
  return issues;
}

/** The sentence of a refused reference: the store's, without the namespace's name. */
export function referenceMessage(e: SecretNotFoundError): string {
  if (e instanceof SecretNotGrantedError) return e.message;
  return `Secret "${e.secretName}" has no key "${e.key ?? ''}"`;
}

/**
 * A step that writes the managed secret: the kept keys of the stored one plus
 * the new values; nothing left means no secret. Taken back, the stored secret
 * returns as it was.
 */
export async function secretStep(
  ctx: GatewayContext,
  name: string,
  data: Record<string, string>,
  retained: string[],
): Promise<Step | undefined> {
  const ns = ctx.config.workerNamespace;
  const before = await ctx.secretStore.get(ns, name);
  const next: Record<string, string> = {};
  for (const key of retained) {
    const value = before?.data[key];
    if (value !== undefined) next[key] = value;
  }
  Object.assign(next, data);
  if (!before && Object.keys(next).length === 0) return undefined;
  const labels = { [MANAGED_SECRET_LABEL]: 'true' };
  const restore = async () => {
    if (before) {
      await ctx.secretStore.put(ns, name, before.data, {
        labels: before.labels,
        annotations: before.annotations,
      });
    } else await ctx.secretStore.delete(ns, name);
  };
  return {
    run: async () => {
      if (Object.keys(next).length === 0) await ctx.secretStore.delete(ns, name);
      else await ctx.secretStore.put(ns, name, next, { labels });
    },
    undo: restore,
  };
}

/** A step that replaces an object's spec and labels (optimistic: a concurrent write is a ConflictError). */
export function replaceStep<T extends ClusterObject>(
  ctx: GatewayContext,
  before: T,
  after: Pick<T, 'spec'> & { labels?: Record<string, string> },
  onDone?: (updated: T) => void,
): Step {
  const kind: SluiceKind = before.kind;
  return {
    run: async () => {
      const updated = await ctx.catalog.update({
        ...before,
        metadata: { ...before.metadata, labels: after.labels ?? before.metadata.labels },
        spec: after.spec,
      });
      onDone?.(updated);
    },
    undo: async () => {
      const current = await ctx.catalog.get<T>(kind, before.metadata.name);
      if (current) {
        await ctx.catalog.update({
          ...current,
          metadata: { ...current.metadata, labels: before.metadata.labels },
          spec: before.spec,
        });
      }
    },
  };
}
