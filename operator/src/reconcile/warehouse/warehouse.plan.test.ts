import { describe, expect, it } from '@jest/globals';
import { type WarehouseResource } from '@sluice/shared/catalog';
import { warehouseConnectionFingerprint, warehouseTestStatus } from '@sluice/shared/warehouses';
import { planWarehouse } from './warehouse.plan.js';

const NOW = '2026-01-02T03:04:05Z';

function warehouse(over: Partial<WarehouseResource['spec']> = {}, generation = 1): WarehouseResource {
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'Warehouse',
    metadata: { name: 'w1', namespace: 'sluice', generation },
    spec: {
      name: 'analytics',
      teamId: 'team-1',
      serverHostname: 'adb-1.2.azuredatabricks.net',
      httpPath: '/sql/1.0/warehouses/abc123',
      accessToken: { valueFrom: { secretKeyRef: { name: 'sluice-warehouse-w1', key: 'access_token' } } },
      catalog: 'main',
      schema: 'sales',
      ...over,
    },
  };
}

/** `w` as it is after a test that passed with its current settings. */
function tested(w: WarehouseResource): WarehouseResource {
  const status = warehouseTestStatus({ ok: true, warehouse: { name: 'Starter', state: 'RUNNING' } }, w, NOW);
  return { ...w, status: { ...status, message: undefined } };
}

describe('planWarehouse', () => {
  it('tests a warehouse that has no status yet (applied with kubectl, or created through the API)', () => {
    const w = warehouse();
    expect(planWarehouse(w).actions).toEqual([{ type: 'testWarehouse', warehouse: w }]);
  });

  it('a verdict without a fingerprint (older status, or pruned by an older CRD) counts for its generation', () => {
    const { connectionFingerprint, ...pruned } = tested(warehouse()).status ?? {};
    expect(connectionFingerprint).toBeDefined();
    const w = { ...warehouse(), status: pruned };
    // What the test just wrote, without the field: nothing to do, so no test loop.
    expect(planWarehouse(w).actions).toEqual([]);
    // Any new generation is tested again (the settings cannot be compared).
    const renamed = { ...w, metadata: { ...w.metadata, generation: 2 } };
    expect(planWarehouse(renamed).actions.map((a) => a.type)).toEqual(['testWarehouse']);
  });

  it('does nothing when the settings were tested and the generation observed (a resync)', () => {
    expect(planWarehouse(tested(warehouse())).actions).toEqual([]);
  });

  it('a new name or team only observes the generation: no test', () => {
    const before = tested(warehouse());
    const renamed = { ...before, metadata: { ...before.metadata, generation: 2 } };
    renamed.spec = { ...renamed.spec, name: 'renamed', teamId: 'team-2' };
    expect(planWarehouse(renamed).actions).toEqual([
      {
        type: 'patchStatus',
        ref: { kind: 'Warehouse', namespace: 'sluice', name: 'w1' },
        status: {
          observedGeneration: 2,
          conditions: [expect.objectContaining({ type: 'Ready', status: 'True', observedGeneration: 2 })],
        },
      },
    ]);
  });

  it.each([
    ['serverHostname', { serverHostname: 'adb-9.9.azuredatabricks.net' }],
    ['httpPath', { httpPath: '/sql/1.0/warehouses/other1' }],
    ['accessToken', { accessToken: { valueFrom: { secretKeyRef: { name: 'dbx', key: 'token' } } } }],
    ['catalog', { catalog: 'other' }],
    ['schema', { schema: undefined }],
  ])('a change of %s tests again', (_field, change) => {
    const before = tested(warehouse());
    const changed = {
      ...before,
      spec: { ...before.spec, ...change },
      metadata: { ...before.metadata, generation: 2 },
    };
    expect(planWarehouse(changed).actions.map((a) => a.type)).toEqual(['testWarehouse']);
  });

  it('leaves a warehouse being deleted alone', () => {
    const w = warehouse();
    w.metadata.deletionTimestamp = NOW;
    expect(planWarehouse(w).actions).toEqual([]);
  });
});

describe('warehouseTestStatus (the status both POST /warehouses/{id}/test and the operator write)', () => {
  it('a passed test: Live, Ready=True, no message, the fingerprint of the tested settings', () => {
    const w = warehouse({}, 3);
    expect(
      warehouseTestStatus({ ok: true, warehouse: { name: 'Starter', state: 'RUNNING' } }, w, NOW),
    ).toEqual({
      state: 'Live',
      message: null,
      testedAt: NOW,
      connectionFingerprint: warehouseConnectionFingerprint(w.spec),
      observedGeneration: 3,
      conditions: [
        {
          type: 'Ready',
          status: 'True',
          reason: 'ConnectionTestPassed',
          message: 'Connected to SQL warehouse "Starter"',
          lastTransitionTime: NOW,
          observedGeneration: 3,
        },
      ],
    });
  });

  it('a failed test: Error with the message; the Ready condition keeps its transition time while it stays False', () => {
    const failed = { ok: false as const, step: 'catalog' as const, message: 'Catalog "main" does not exist' };
    const first = warehouseTestStatus(failed, warehouse(), NOW);
    expect(first).toMatchObject({
      state: 'Error',
      message: 'Catalog "main" does not exist',
      conditions: [
        { status: 'False', reason: 'ConnectionTestFailed', message: 'Catalog "main" does not exist' },
      ],
    });
    const again = warehouseTestStatus(
      failed,
      { ...warehouse(), status: { ...first, message: first.message ?? undefined } },
      '2026-01-02T04:00:00Z',
    );
    expect(again.testedAt).toBe('2026-01-02T04:00:00Z');
    expect(again.conditions?.[0]?.lastTransitionTime).toBe(NOW);
  });

  it('the fingerprint reads the connection settings only', () => {
    const w = warehouse();
    const fp = warehouseConnectionFingerprint(w.spec);
    expect(warehouseConnectionFingerprint({ ...w.spec, name: 'other', teamId: 'team-9' })).toBe(fp);
    expect(warehouseConnectionFingerprint({ ...w.spec, catalog: 'x' })).not.toBe(fp);
    // Key order does not matter (the API server may reorder).
    const { catalog, ...rest } = w.spec;
    expect(warehouseConnectionFingerprint({ ...rest, catalog } as typeof w.spec)).toBe(fp);
  });
});
