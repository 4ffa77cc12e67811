import {
  MANAGED_SECRET_LABEL,
  MANAGED_SECRET_PREFIX,
  SecretNotFoundError,
  SecretNotGrantedError,
  type SecretScope,
  type SecretStorePort,
} from '../ports/secret-store.js';

// Who may reference which secret (docs/security.md, "Secret references"). A
// secret of the worker namespace is usable by a resource only when whoever
// created it granted it, as Argo CD projects and External Secrets scope
// theirs: the annotations below name the teams, or the environments (every
// team of them), that may reference it. No grant, no use. The control
// plane's own Secrets (signing key, master key, database URL) are never
// usable, whatever their annotations say; a managed secret (`sluice-…`) is
// usable by the object it belongs to only.

/** Comma-separated team ids that may reference the secret. */
export const ALLOWED_TEAMS_ANNOTATION = 'sluice.dev/allowed-teams';
/** Comma-separated environment ids: every team of those environments may reference the secret. */
export const ALLOWED_ENVS_ANNOTATION = 'sluice.dev/allowed-envs';
/** Set (to "true") by the chart on the Secrets of the gateway and the operator: never usable. */
export const CONTROL_PLANE_LABEL = 'sluice.dev/control-plane';

/** The part of a stored secret the decision reads (never its data). */
export interface SecretMeta {
  name: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface SecretGrant {
  teamIds: string[];
  envIds: string[];
}

const split = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);

/** The teams and environments a secret's annotations grant it to. */
export function grantOf(meta: Pick<SecretMeta, 'annotations'>): SecretGrant {
  return {
    teamIds: split(meta.annotations[ALLOWED_TEAMS_ANNOTATION]),
    envIds: split(meta.annotations[ALLOWED_ENVS_ANNOTATION]),
  };
}

/** The annotations that grant a secret (none for an empty list, so an empty grant leaves no key). */
export function grantAnnotations(grant: SecretGrant): Record<string, string> {
  const out: Record<string, string> = {};
  const teams = [...new Set(grant.teamIds)].sort();
  const envs = [...new Set(grant.envIds)].sort();
  if (teams.length) out[ALLOWED_TEAMS_ANNOTATION] = teams.join(',');
  if (envs.length) out[ALLOWED_ENVS_ANNOTATION] = envs.join(',');
  return out;
}

export const isControlPlaneSecret = (meta: Pick<SecretMeta, 'labels'>): boolean =>
  meta.labels[CONTROL_PLANE_LABEL] === 'true';

/** Created by Sluice for an object's inline values (by label or by its reserved name). */
export const isManagedSecret = (meta: Pick<SecretMeta, 'name' | 'labels'>): boolean =>
  meta.labels[MANAGED_SECRET_LABEL] === 'true' || meta.name.startsWith(MANAGED_SECRET_PREFIX);

/** Whether `scope` may reference `meta`: the one rule every reference is checked by. */
export function isSecretUsable(meta: SecretMeta, scope: SecretScope): boolean {
  if (isControlPlaneSecret(meta)) return false;
  if (isManagedSecret(meta)) return scope.ownSecrets.includes(meta.name);
  const grant = grantOf(meta);
  if (scope.anyGrant) return grant.teamIds.length + grant.envIds.length > 0;
  return (
    grant.teamIds.some((t) => scope.teamIds.includes(t)) ||
    grant.envIds.some((e) => scope.envIds.includes(e)) ||
    (scope.envGrantsUnchecked === true && grant.envIds.length > 0)
  );
}

/**
 * `resolve` of every adapter, the one place a reference meets its secret:
 * the referenced key of a secret read with `get`, if the scope may use it.
 */
export async function resolveSecretRef(
  store: Pick<SecretStorePort, 'get'>,
  namespace: string,
  ref: { name: string; key: string },
  scope: SecretScope,
): Promise<string> {
  const secret = await store.get(namespace, ref.name);
  if (!secret || !isSecretUsable(secret, scope)) throw new SecretNotGrantedError(namespace, ref.name);
  if (!Object.hasOwn(secret.data, ref.key)) throw new SecretNotFoundError(namespace, ref.name, ref.key);
  return secret.data[ref.key] as string;
}
