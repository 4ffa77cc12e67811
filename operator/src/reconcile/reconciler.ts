import type { ClusterObject, SluiceKind } from '@sluice/shared/ports';
import type { ObjectRef, Plan } from './actions.js';

/** The controller's caches as a reconciler reads them. */
export interface CacheView {
  get<T extends ClusterObject>(kind: SluiceKind, namespace: string, name: string | undefined): T | undefined;
  /** The objects of `kind` whose `references` (by its reconciler) include `ref`: a lookup, not a scan. */
  referencing<T extends ClusterObject>(kind: SluiceKind, ref: ObjectRef): T[];
}

export interface ReconcileContext {
  cache: CacheView;
  now: string;
}

/**
 * The reconciler of one kind, registered with the controller
 * (controller/controller.ts), which stays generic: it watches the kind,
 * keeps the reference index from `references`, queues the object and its
 * `dependents` on every change, and executes what `reconcile` plans.
 * Everything a kind knows of its neighbours is here, in its own folder.
 */
export interface Reconciler<T extends ClusterObject = ClusterObject> {
  readonly kind: SluiceKind;
  /**
   * The objects whose cache entries `o`'s plan reads by reference (its
   * connector, its subscription), kept in the reference index so that
   * `CacheView.referencing` finds `o` from them. None: nothing refers to
   * them by this kind.
   */
  references?(o: T): ObjectRef[];
  /**
   * The objects whose plan reads `o`: queued with it on each of its changes,
   * its deletion included (the index still holds what referenced it).
   */
  dependents?(o: T, cache: CacheView): ObjectRef[];
  /** Worker ids are this kind's `namespace/name`: a worker's change (ready, failed) queues its object. */
  readonly ownsWorkers?: boolean;
  /**
   * What to do about `ref` (its object is undefined once it left the
   * caches): reads the caches (and, for a kind with workers, the worker
   * runtime) and asks the kind's pure planner. Undefined: nothing to do.
   */
  reconcile(
    ref: ObjectRef,
    object: T | undefined,
    ctx: ReconcileContext,
  ): Promise<Plan | undefined> | Plan | undefined;
}

/** The queue key and index entry of an object: `Kind/namespace/name`. */
export function refKey(ref: ObjectRef): string {
  return `${ref.kind}/${ref.namespace}/${ref.name}`;
}

/** The reference to `o`. */
export function refOf(o: ClusterObject): ObjectRef {
  return { kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name };
}

export function objectRef(kind: SluiceKind, namespace: string, name: string): ObjectRef {
  return { kind, namespace, name };
}
