import {
  isSecretRef,
  MANAGED_SECRET_LABEL,
  MANAGED_SECRET_PREFIX,
  type ClusterObject,
  type SluiceKind,
} from '@sluice/shared';
import type { GatewayContext } from '../context.js';
import type { ValidationIssue } from '../http/errors.js';
import type { Step } from './store.js';

// The managed secret of a catalog object (spec 2.14): `managedSecretName` in
// shared (the operator deletes a connector's too).
export { managedSecretName } from '@sluice/shared';

/**
 * 422 items for `valueFrom` references (at `fields` of `config`) that point at
 * no secret or no key: a worker could not start with them. References to the
 * object's own managed secret are ours and skipped.
 */
/**
 * Another object's managed Secret: it holds that object's (maybe another
 * team's) values, so no configuration may reference it — a worker or a
 * pre-flight check would receive them. `ownSecret`: the object's own one.
 */
export function isForeignManagedSecret(name: string, ownSecret: string | undefined): boolean {
  return name.startsWith(MANAGED_SECRET_PREFIX) && name !== ownSecret;
}

export async function missingReferences(
  ctx: GatewayContext,
  values: { loc: (string | number)[]; value: unknown }[],
  ownSecret: string,
): Promise<ValidationIssue[]> {
  const issues: ValidationIssue[] = [];
  for (const { loc, value } of values) {
    if (!isSecretRef(value)) continue;
    const { name, key } = value.valueFrom.secretKeyRef;
    if (name === ownSecret) continue;
    if (isForeignManagedSecret(name, ownSecret)) {
      issues.push({
        loc,
        msg: `Secret "${name}" is managed by Sluice for another object; reference a Secret of your own`,
        type: 'value_error',
      });
      continue;
    }
    const secret = await ctx.secretStore.get(ctx.config.namespace, name);
    if (!secret)
      issues.push({
        loc,
        msg: `Secret "${name}" does not exist (GET /k8s-secrets lists them)`,
        type: 'value_error',
      });
    else if (!Object.hasOwn(secret.data, key)) {
      issues.push({ loc, msg: `Secret "${name}" has no key "${key}"`, type: 'value_error' });
    }
  }
  return issues;
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
  const ns = ctx.config.namespace;
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
    if (before) await ctx.secretStore.put(ns, name, before.data, before.labels);
    else await ctx.secretStore.delete(ns, name);
  };
  return {
    run: async () => {
      if (Object.keys(next).length === 0) await ctx.secretStore.delete(ns, name);
      else await ctx.secretStore.put(ns, name, next, labels);
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
