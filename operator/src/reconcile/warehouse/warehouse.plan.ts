import { type WarehouseResource } from '@sluice/shared/catalog';
import { warehouseConnectionFingerprint } from '@sluice/shared/warehouses';
import type { Plan } from '../actions.js';

/**
 * A Warehouse (spec 2.12, 3.3) has no worker: its status is the verdict of
 * the last connection test. The test runs when the connection settings
 * differ from those it last ran with, `status.connectionFingerprint` (a new
 * warehouse, a changed hostname, HTTP path, token reference, catalog or
 * schema), wherever the change came from: kubectl, Argo CD, or the gateway
 * (whose own tests write the same fingerprint, so they are not repeated). A
 * newer generation with the same settings (a rename, a team move) is only
 * observed: no call leaves. A resync finds nothing to do; a failed test is
 * not retried until the settings change or someone asks with POST
 * /warehouses/{id}/test.
 *
 * A status without a fingerprint but with a verdict (written before the
 * field existed, or pruned by an API server whose CRD predates it) counts
 * as the test of its observedGeneration: such a warehouse is tested again
 * on any new generation, never in a loop.
 */
export function planWarehouse(w: WarehouseResource): Plan {
  if (w.metadata.deletionTimestamp) return { actions: [] };
  const status = w.status;
  const generation = w.metadata.generation;
  const settingsChanged =
    status?.state === undefined ||
    (status.connectionFingerprint === undefined
      ? status.observedGeneration !== generation
      : status.connectionFingerprint !== warehouseConnectionFingerprint(w.spec));
  if (settingsChanged) return { actions: [{ type: 'testWarehouse', warehouse: w }] };
  if (generation === undefined || status.observedGeneration === generation) return { actions: [] };
  const ref = { kind: w.kind, namespace: w.metadata.namespace, name: w.metadata.name };
  return {
    actions: [
      {
        type: 'patchStatus',
        ref,
        status: {
          observedGeneration: generation,
          ...(status.conditions
            ? { conditions: status.conditions.map((c) => ({ ...c, observedGeneration: generation })) }
            : {}),
        },
      },
    ],
  };
}
