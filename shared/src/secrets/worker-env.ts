import { createHash } from 'node:crypto';
import { isSecretRef } from '../connectors/secret.js';
import { SecretNotFoundError, type SecretStorePort } from '../ports/secret-store.js';
import type { SecretScope } from '../ports/secret-store.js';
import { isSecretUsable } from './grants.js';

// How a worker in a pod receives secret values: the Deployment maps every
// `valueFrom.secretKeyRef` of its configuration to an environment variable
// (Kubernetes resolves it from the Secret; the operator never reads the
// value), and the worker reads the variable of each reference. The name is
// derived from the reference alone, so both sides agree without a table.

export interface SecretKeyRef {
  name: string;
  key: string;
}

/** `SLUICE_SECRET_<16 hex>`: a valid variable name for any Secret name and key. */
export function secretEnvName(ref: SecretKeyRef): string {
  const digest = createHash('sha256').update(ref.name).update('\0').update(ref.key).digest('hex');
  return `SLUICE_SECRET_${digest.slice(0, 16).toUpperCase()}`;
}

/** Every distinct reference in a configuration, in a stable order. */
export function secretRefsIn(value: unknown): SecretKeyRef[] {
  const found = new Map<string, SecretKeyRef>();
  const visit = (v: unknown): void => {
    if (isSecretRef(v)) {
      const { name, key } = v.valueFrom.secretKeyRef;
      found.set(`${name}\0${key}`, { name, key });
    } else if (Array.isArray(v)) {
      v.forEach(visit);
    } else if (v && typeof v === 'object') {
      Object.values(v).forEach(visit);
    }
  };
  visit(value);
  return [...found.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, ref]) => ref);
}

/** Thrown when a reference has no value (not given to the worker, or missing or ungranted in the store); names the reference, never a value. */
export class MissingSecretError extends Error {
  override readonly name = 'MissingSecretError';
}

/**
 * A copy of `value` with every `valueFrom` reference replaced by
 * `valueOf(ref)`, in memory only; `missing(ref)` says why one has none.
 */
export function withSecretValues<T>(
  value: T,
  valueOf: (ref: SecretKeyRef) => string | undefined,
  missing: (ref: SecretKeyRef) => string,
): T {
  const visit = (v: unknown): unknown => {
    if (isSecretRef(v)) {
      const { name, key } = v.valueFrom.secretKeyRef;
      const found = valueOf({ name, key });
      if (found === undefined) throw new MissingSecretError(missing({ name, key }));
      return found;
    }
    if (Array.isArray(v)) return v.map(visit);
    if (v && typeof v === 'object')
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, visit(x)]));
    return v;
  };
  return visit(value) as T;
}

/** The worker's side: the value of a reference from its environment, if the runtime mapped it. */
export function secretFromEnv(ref: SecretKeyRef, env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env[secretEnvName(ref)];
}

/**
 * The process runtime's side (one machine): the environment a Deployment
 * would give the worker, resolved from the secret store for `scope` (the
 * worker's team and the managed secrets of the objects it serves). A
 * reference to a missing, ungranted secret or key is left out, and the
 * worker then fails naming it.
 */
export async function workerSecretEnv(
  store: SecretStorePort,
  namespace: string,
  config: unknown,
  scope: SecretScope,
): Promise<Record<string, string>> {
  const env: Record<string, string> = {};
  for (const ref of secretRefsIn(config)) {
    try {
      env[secretEnvName(ref)] = await store.resolve(namespace, ref, scope);
    } catch (e) {
      if (!(e instanceof SecretNotFoundError)) throw e;
    }
  }
  return env;
}

/**
 * `value` with its references resolved from the store for `scope` (the
 * gateway's own use of a worker configuration: previews, backfills), read
 * from the environment the worker would get, as the worker reads it; a
 * missing or ungranted one throws MissingSecretError.
 */
export async function resolveSecretValues<T>(
  store: SecretStorePort,
  namespace: string,
  value: T,
  scope: SecretScope,
): Promise<T> {
  const env = await workerSecretEnv(store, namespace, value, scope);
  return withSecretValues(
    value,
    (ref) => secretFromEnv(ref, env),
    (ref) => `secret "${ref.name}" key "${ref.key}" is missing, or not granted to this team`,
  );
}

/**
 * The Kubernetes runtime's side: the references of `config` that `scope` may
 * use, the only ones its Deployment maps to `secretKeyRef`s (the kubelet
 * resolves them, so this is where a worker pod's grants are checked). Reads
 * the namespace's listing (names, labels, annotations), never a value. A
 * reference to a missing, ungranted or control-plane secret is left out, and
 * the worker then fails naming it.
 */
export async function grantedRefs(
  store: SecretStorePort,
  namespace: string,
  config: unknown,
  scope: SecretScope,
): Promise<SecretKeyRef[]> {
  const refs = secretRefsIn(config);
  if (refs.length === 0) return [];
  const secrets = new Map((await store.list(namespace)).map((s) => [s.name, s]));
  return refs.filter((ref) => {
    const secret = secrets.get(ref.name);
    return !!secret && isSecretUsable(secret, scope);
  });
}
