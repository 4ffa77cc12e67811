import type { WarehouseResource } from '@sluice/shared/catalog';
import type { SluiceKind, WorkerSpec } from '@sluice/shared/ports';

// What a reconciler decides, as data: the executor (executor.ts) applies
// these, the unit tests read them. A plan that is empty changes nothing, so
// reconciling a converged object twice is a no-op by construction.

export interface ObjectRef {
  kind: SluiceKind;
  namespace: string;
  name: string;
}

export type Action =
  /** Merge patch of status (only the fields that change). */
  | { type: 'patchStatus'; ref: ObjectRef; status: Record<string, unknown> }
  /**
   * Merge patch of an object's metadata: its finalizer, a data model's
   * ownerReference. Never of a spec: the spec is its users' (kubectl, Argo
   * CD, the gateway's API calls), and the operator only reads it.
   */
  | { type: 'patch'; ref: ObjectRef; patch: { metadata: Record<string, unknown> } }
  /**
   * Deletes an object (absent is fine): a deleted connector's data models.
   * With `ifGone`, only when that object is absent from the cluster as read
   * at once, not from the caches (the garbage collector's check of an owner).
   */
  | { type: 'delete'; ref: ObjectRef; ifGone?: ObjectRef }
  | { type: 'ensureWorker'; spec: WorkerSpec }
  | { type: 'stopWorker'; id: string }
  /** A managed Secret of a deleted object (absent is fine). */
  | { type: 'deleteSecret'; namespace: string; name: string }
  /**
   * A warehouse's connection test with the settings of this object, its
   * verdict written as its status (warehouse/warehouse.tester.ts).
   */
  | { type: 'testWarehouse'; warehouse: WarehouseResource }
  /** A Kubernetes Event on the object (a log line in the embedded mode). */
  | { type: 'event'; ref: ObjectRef; eventType: 'Normal' | 'Warning'; reason: string; message: string };

export interface Plan {
  actions: Action[];
  /** Look again after this long even if nothing changes (waiting on something not watched). */
  requeueAfterMs?: number;
}
