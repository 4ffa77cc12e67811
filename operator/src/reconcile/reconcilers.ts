import type { WorkerRuntimePort } from '@sluice/shared/ports';
import { connectorReconciler } from './connector/connector.reconciler.js';
import { dataModelReconciler } from './datamodel/datamodel.reconciler.js';
import { pipelineReconciler } from './pipeline/pipeline.reconciler.js';
import type { Reconciler } from './reconciler.js';
import { subscriptionReconciler } from './subscription/subscription.reconciler.js';
import { warehouseReconciler } from './warehouse/warehouse.reconciler.js';

export interface ReconcilersOptions {
  runtime: Pick<WorkerRuntimePort, 'observe'>;
  secretNamespace?: string;
  homeNamespace?: string;
  slotWalDegradedBytes: number;
  captureReleaseTimeoutMs: number;
  /** Whether Warehouses are reconciled (the executor can test them). */
  warehouses: boolean;
}

/** The reconciler of every kind the controller runs, one folder each. */
export function kindReconcilers(options: ReconcilersOptions): Reconciler[] {
  return [
    connectorReconciler(options),
    dataModelReconciler,
    subscriptionReconciler,
    pipelineReconciler(options),
    ...(options.warehouses ? [warehouseReconciler] : []),
  ] as Reconciler[];
}
