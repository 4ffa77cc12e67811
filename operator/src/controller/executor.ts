import {
  NotFoundError,
  type ClusterObject,
  type ClusterPort,
  type SecretStorePort,
  type WorkerRuntimePort,
} from '@sluice/shared/ports';
import type { Action } from '../reconcile/actions.js';
import type { EventRecorder } from './events.js';
import { testWarehouse, type WarehouseTesterOptions } from '../reconcile/warehouse/warehouse.tester.js';

/**
 * Applies a plan's actions in order; the thin side of "pure planning, thin
 * executor". An object that vanished meanwhile is not an error (its delete
 * event reconciles it again); any other failure throws and the key is
 * retried with back-off.
 */
export async function execute(
  actions: readonly Action[],
  deps: {
    cluster: ClusterPort;
    runtime: WorkerRuntimePort;
    events: EventRecorder;
    secrets?: Pick<SecretStorePort, 'delete'>;
    /** What a `testWarehouse` needs; unset, the controller watches no Warehouse. */
    warehouses?: WarehouseTesterOptions;
    now?: () => string;
    /** Told of every object a write returned (the controller's caches take it at once). */
    observe?: (o: ClusterObject) => void;
  },
): Promise<void> {
  for (const a of actions) {
    try {
      switch (a.type) {
        case 'patchStatus':
          deps.observe?.(await deps.cluster.patchStatus(a.ref.kind, a.ref.namespace, a.ref.name, a.status));
          break;
        case 'patch':
          deps.observe?.(await deps.cluster.patch(a.ref.kind, a.ref.namespace, a.ref.name, a.patch));
          break;
        case 'delete':
          // A cache may lag the cluster (another watch, a relist): the owner is looked up afresh.
          if (a.ifGone && (await deps.cluster.get(a.ifGone.kind, a.ifGone.namespace, a.ifGone.name))) break;
          await deps.cluster.delete(a.ref.kind, a.ref.namespace, a.ref.name);
          break;
        case 'ensureWorker':
          await deps.runtime.ensure(a.spec);
          break;
        case 'stopWorker':
          await deps.runtime.stop(a.id);
          break;
        case 'deleteSecret':
          await deps.secrets?.delete(a.namespace, a.name);
          break;
        case 'testWarehouse': {
          if (!deps.warehouses) break;
          const { namespace, name } = a.warehouse.metadata;
          const now = deps.now?.() ?? new Date().toISOString();
          const status = await testWarehouse(deps.warehouses, a.warehouse, now);
          deps.observe?.(await deps.cluster.patchStatus('Warehouse', namespace, name, status));
          break;
        }
        case 'event':
          await deps.events.record(a.ref, a.eventType, a.reason, a.message);
          break;
      }
    } catch (error) {
      if (error instanceof NotFoundError) continue;
      throw error;
    }
  }
}
