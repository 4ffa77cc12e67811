import { expect } from '@jest/globals';
import { type WarehouseResource } from '@sluice/shared/catalog';
import { warehouseConnectionFingerprint } from '@sluice/shared/warehouses';

// What a Warehouse's status says after a connection test, as the gateway's
// POST /warehouses/{id}/test and the operator's reconciler both write it
// (shared/src/warehouses): the assertions of their tests.

/** A passed test of `w`'s current settings and generation, against the stand-in's warehouse. */
export function expectPassedTest(w: WarehouseResource, warehouseName = 'Starter Warehouse'): void {
  expect(w.status).toMatchObject({
    state: 'Live',
    observedGeneration: w.metadata.generation,
    connectionFingerprint: warehouseConnectionFingerprint(w.spec),
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'ConnectionTestPassed',
        message: `Connected to SQL warehouse "${warehouseName}"`,
        observedGeneration: w.metadata.generation,
      },
    ],
  });
  expect(w.status?.message).toBeUndefined();
}

/** A test the outbound policy refused: `address` is a loopback, private or link-local IP literal. */
export function expectRefusedAddress(w: WarehouseResource, address: string): void {
  expect(w.status?.state).toBe('Error');
  expect(w.status?.message).toContain(
    `Connections to ${address} are not allowed (private, loopback or link-local address)`,
  );
  expect(w.status?.conditions?.[0]).toMatchObject({
    type: 'Ready',
    status: 'False',
    reason: 'ConnectionTestFailed',
    message: w.status?.message,
  });
}
