// Spec 2.14: where the values of secret fields live. Connector and warehouse
// configurations hold only `{valueFrom: {secretKeyRef: {name, key}}}`; the
// value is in a Secret of the worker namespace: a Kubernetes Secret with the
// Kubernetes adapter, a row sealed under the master key with the embedded one.

/** The label that marks a secret Sluice created and owns (named `sluice-…`). */
export const MANAGED_SECRET_LABEL = 'sluice.dev/managed';
/** Managed secrets are named with this prefix; users may not create such names. */
export const MANAGED_SECRET_PREFIX = 'sluice-';

/**
 * The managed secret of a catalog object (spec 2.14): where the inline secret
 * values of its configuration go. One per object, named after it, in the
 * worker namespace; deleted with it (by the gateway, or by the operator's
 * finalizer when a connector is deleted with kubectl).
 */
export const managedSecretName = (kind: 'connector' | 'subscription' | 'warehouse', id: string) =>
  `${MANAGED_SECRET_PREFIX}${kind}-${id}`;

/**
 * What a reference is checked against (secrets/grants.ts, isSecretUsable): the
 * teams it is made for and the managed secrets it owns.
 */
export interface SecretScope {
  /** The team (or, for a pre-flight without a connector, the caller's teams) the reference serves. */
  teamIds: readonly string[];
  /** The environments of those teams. */
  envIds: readonly string[];
  /** The managed secrets of the objects whose configuration holds the reference. */
  ownSecrets: readonly string[];
  /** A superuser's look: any secret granted to someone counts as granted. */
  anyGrant?: boolean;
  /**
   * The operator's look: it cannot see which environment a team is in, so
   * any environment grant counts (the gateway checked it where it can).
   */
  envGrantsUnchecked?: boolean;
}

export interface StoredSecret {
  name: string;
  data: Record<string, string>;
  labels: Record<string, string>;
  /** Where the grant lives (`sluice.dev/allowed-teams`, `sluice.dev/allowed-envs`). */
  annotations: Record<string, string>;
  createdAt: Date;
}

/** What a listing shows: the keys, never the values. */
export interface SecretSummary {
  name: string;
  keys: string[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  createdAt: Date;
}

/** Labels and annotations of a secret, as `put` writes them. */
export interface SecretMetadata {
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** A reference that points at no secret, or at a key the secret does not have. The message holds no value. */
export class SecretNotFoundError extends Error {
  override readonly name: string = 'SecretNotFoundError';
  constructor(
    readonly namespace: string,
    readonly secretName: string,
    readonly key?: string,
  ) {
    super(
      key === undefined
        ? `Secret "${secretName}" not found in namespace "${namespace}"`
        : `Key "${key}" not found in secret "${secretName}" of namespace "${namespace}"`,
    );
  }
}

/**
 * A reference the scope may not use (docs/security.md, "Secret references").
 * A missing secret gets this error too: the message never tells whether a
 * secret the caller may not see exists.
 */
export class SecretNotGrantedError extends SecretNotFoundError {
  override readonly name: string = 'SecretNotGrantedError';
  constructor(namespace: string, secretName: string) {
    super(namespace, secretName);
    this.message =
      `Secret "${secretName}" is not granted to this team (a secret is usable once annotated ` +
      `sluice.dev/allowed-teams or sluice.dev/allowed-envs; GET /k8s-secrets lists the usable ones)`;
  }
}

export interface SecretStorePort {
  readonly adapter: 'embedded' | 'kubernetes';
  /** Creates the secret or replaces its data, labels and annotations whole. */
  put(namespace: string, name: string, data: Record<string, string>, meta?: SecretMetadata): Promise<void>;
  get(namespace: string, name: string): Promise<StoredSecret | undefined>;
  /**
   * The value a reference points at, when `scope` may use the secret
   * (`isSecretUsable`): SecretNotGrantedError when it may not or the secret
   * is missing, SecretNotFoundError when the key is missing.
   */
  resolve(namespace: string, ref: { name: string; key: string }, scope: SecretScope): Promise<string>;
  /** Every secret of the namespace by name, without values. */
  list(namespace: string): Promise<SecretSummary[]>;
  /** True when there was a secret to delete. */
  delete(namespace: string, name: string): Promise<boolean>;
}
