import type { WarehouseResource } from '@sluice/shared/catalog';
import type { Reconciler } from '../reconciler.js';
import { planWarehouse } from './warehouse.plan.js';

/**
 * The Warehouse (spec 3.3): its plan reads its own object only, so it
 * references nothing and nothing depends on it; the effect of its
 * `testWarehouse` action is warehouse.tester.ts.
 */
export const warehouseReconciler: Reconciler<WarehouseResource> = {
  kind: 'Warehouse',
  reconcile: (_ref, warehouse) => (warehouse ? planWarehouse(warehouse) : undefined),
};
