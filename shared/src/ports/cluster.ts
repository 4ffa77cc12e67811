/**
 * The cluster port (architecture brief, "Two runtimes, one code path"): the
 * operations the gateway and the operator need on the sluice.dev custom
 * resources, with Kubernetes semantics. Two adapters implement it: the
 * Kubernetes one (`@kubernetes/client-node` against a real API server) and the
 * embedded one (a store in the service's own database). Both must pass the same
 * contract test suite.
 */
export const SLUICE_KINDS = ['Connector', 'DataModel', 'Subscription', 'Pipeline', 'Warehouse'] as const;
export type SluiceKind = (typeof SLUICE_KINDS)[number];

/** An object this one belongs to: the garbage collector deletes it when that one is gone. */
export interface OwnerReference {
  apiVersion: string;
  kind: string;
  name: string;
  uid: string;
  controller?: boolean;
  blockOwnerDeletion?: boolean;
}

export interface ObjectMeta {
  name: string;
  namespace: string;
  uid?: string;
  resourceVersion?: string;
  generation?: number;
  creationTimestamp?: string;
  deletionTimestamp?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
  ownerReferences?: OwnerReference[];
}

export interface ClusterObject<Spec = unknown, Status = unknown> {
  apiVersion: string;
  kind: SluiceKind;
  metadata: ObjectMeta;
  spec: Spec;
  status?: Status;
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';
export interface WatchEvent<T extends ClusterObject = ClusterObject> {
  type: WatchEventType;
  object: T;
}

export interface ListResult<T extends ClusterObject = ClusterObject> {
  items: T[];
  /** Start a watch from here to see every later change exactly once. */
  resourceVersion: string;
}

/** Raised when a write names a stale resourceVersion (HTTP 409 in Kubernetes). */
export class ConflictError extends Error {
  override readonly name = 'ConflictError';
}
/** Raised when an object does not exist (HTTP 404 in Kubernetes). */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError';
}
/** Raised by create when the name is taken (HTTP 409 AlreadyExists in Kubernetes). */
export class AlreadyExistsError extends Error {
  override readonly name = 'AlreadyExistsError';
}
/** Raised when a watch asks for a resourceVersion that was compacted (HTTP 410). */
export class ExpiredError extends Error {
  override readonly name = 'ExpiredError';
}

/**
 * Semantics every adapter honours (the contract suite checks them):
 * - resourceVersion is one cluster-wide, strictly increasing counter (as
 *   etcd's revision); every write of any object takes the next value;
 * - generation starts at 1 and grows only when `spec` changes;
 * - `update` with a stale `metadata.resourceVersion` throws ConflictError;
 * - `delete` of an object with finalizers only sets `deletionTimestamp`
 *   (MODIFIED); it disappears (DELETED) when an update removes the last one;
 * - `watch` delivers, in resourceVersion order and exactly once, every event
 *   after the given version; a version older than the retained history throws
 *   ExpiredError, and the caller relists.
 */
export interface ClusterPort {
  /** `embedded` or `kubernetes`; shown by /healthchecks/k8s and /config/deployment. */
  readonly adapter: 'embedded' | 'kubernetes';
  /** Cheap reachability check for health endpoints. */
  ping(): Promise<void>;
  get<T extends ClusterObject>(kind: SluiceKind, namespace: string, name: string): Promise<T | undefined>;
  list<T extends ClusterObject>(
    kind: SluiceKind,
    namespace?: string,
    labelSelector?: string,
  ): Promise<ListResult<T>>;
  /**
   * Events after `resourceVersion`, in order; ends when `signal` aborts.
   * `onBookmark(rv)` (Kubernetes' BOOKMARK events) says every event of the
   * kind up to `rv` has been delivered: a place to resume from even when the
   * kind itself had no writes.
   */
  watch<T extends ClusterObject>(
    kind: SluiceKind,
    resourceVersion: string,
    onEvent: (event: WatchEvent<T>) => void | Promise<void>,
    signal: AbortSignal,
    onBookmark?: (resourceVersion: string) => void | Promise<void>,
  ): Promise<void>;
  create<T extends ClusterObject>(object: T): Promise<T>;
  /** Replaces spec/metadata; a stale `metadata.resourceVersion` is a ConflictError. */
  update<T extends ClusterObject>(object: T): Promise<T>;
  /** JSON merge patch (RFC 7386) of metadata and spec (never status); throws NotFoundError. */
  patch<T extends ClusterObject>(
    kind: SluiceKind,
    namespace: string,
    name: string,
    patch: unknown,
  ): Promise<T>;
  /** JSON merge patch of the status subresource only; generation is unchanged. */
  patchStatus<T extends ClusterObject>(
    kind: SluiceKind,
    namespace: string,
    name: string,
    status: unknown,
  ): Promise<T>;
  /** Marks for deletion; the object goes once its finalizers are removed. Throws NotFoundError. */
  delete(kind: SluiceKind, namespace: string, name: string): Promise<void>;
}
