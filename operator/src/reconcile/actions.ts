import type { SluiceKind, WorkerSpec } from '@sluice/shared';

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
  /** Merge patch of metadata/spec of an object (finalizers, a child's desired state). */
  | { type: 'patch'; ref: ObjectRef; patch: Record<string, unknown> }
  | { type: 'ensureWorker'; spec: WorkerSpec }
  | { type: 'stopWorker'; id: string }
  /** A managed Secret of a deleted object (absent is fine). */
  | { type: 'deleteSecret'; namespace: string; name: string }
  /** A Kubernetes Event on the object (a log line in the embedded mode). */
  | { type: 'event'; ref: ObjectRef; eventType: 'Normal' | 'Warning'; reason: string; message: string };

export interface Plan {
  actions: Action[];
  /** Look again after this long even if nothing changes (waiting on something not watched). */
  requeueAfterMs?: number;
}
