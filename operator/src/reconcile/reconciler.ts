import type { ClusterObject, SluiceKind } from '@sluice/shared';
import type { Plan } from './actions.js';

/**
 * A kind whose plan reads its own object and nothing else (no other kind's
 * cache, no worker): the controller watches it, queues it on its own
 * changes and on resync, and runs `plan`'s actions. The Warehouse is one.
 */
export interface StandaloneReconciler<T extends ClusterObject = ClusterObject> {
  kind: SluiceKind;
  /** Pure: the same object gives the same actions; a converged one, none. */
  plan(object: T): Plan;
}
