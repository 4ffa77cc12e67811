import { describe, expect, it } from '@jest/globals';
import { CLUSTER_API_VERSION } from '@sluice/shared/cluster';
import { type ClusterObject, type SluiceKind } from '@sluice/shared/ports';
import { isMirrorable, project } from './projections.js';

const ID = '0b5c6a3e-2f7d-4c1e-9a8b-1d2e3f405162';
const TEAM = '7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0';
const REF1 = '11111111-2222-4333-8444-555555555555';
const REF2 = '22222222-3333-4444-8555-666666666666';
const REF3 = '33333333-4444-4555-8666-777777777777';
const REF4 = '44444444-5555-4666-8777-888888888888';
const NIL = '00000000-0000-0000-0000-000000000000';
const CREATED = '2026-01-02T03:04:05Z';
const NOW = new Date('2026-06-07T08:09:10Z');

function object(
  kind: SluiceKind,
  spec: unknown,
  opts: {
    status?: unknown;
    generation?: number;
    rv?: string;
    deletionTimestamp?: string;
    name?: string;
  } = {},
): ClusterObject {
  const o: ClusterObject = {
    apiVersion: CLUSTER_API_VERSION,
    kind,
    metadata: {
      name: opts.name ?? ID,
      namespace: 'workers',
      uid: 'a-uid',
      resourceVersion: opts.rv ?? '42',
      generation: opts.generation ?? 1,
      creationTimestamp: CREATED,
      ...(opts.deletionTimestamp ? { deletionTimestamp: opts.deletionTimestamp } : {}),
    },
    spec,
  };
  if (opts.status !== undefined) o.status = opts.status;
  return o;
}

const connectorSpec = {
  name: 'orders',
  teamId: TEAM,
  connectorType: 'KAFKA_SOURCE',
  configuration: { topic: 'orders' },
  desiredState: 'running',
};

describe('project', () => {
  it('projects a Connector into mirror_connectors with its columns and jsonb copies', () => {
    const o = object('Connector', connectorSpec, { status: { state: 'live', message: 'ok' } });
    const { table, values } = project(o, NOW);
    expect(table).toBe('mirror_connectors');
    expect(values).toEqual({
      id: ID,
      namespace: 'workers',
      team_id: TEAM,
      name: 'orders',
      resource_version: '42',
      generation: 1,
      spec: JSON.stringify(connectorSpec),
      status: JSON.stringify({ state: 'live', message: 'ok' }),
      deleting: false,
      deleted: false,
      created_at: new Date(CREATED),
      // Never changed since it was created.
      updated_at: new Date(CREATED),
      connector_type: 'KAFKA_SOURCE',
      direction: 'source',
      state: 'live',
      desired_state: 'running',
    });
  });

  it('gives a target connector its direction', () => {
    const o = object('Connector', { ...connectorSpec, connectorType: 'POSTGRES_TARGET' });
    expect(project(o, NOW).values).toMatchObject({ connector_type: 'POSTGRES_TARGET', direction: 'target' });
  });

  it('shows a Connector without a status as paused, with a null status column', () => {
    const { values } = project(object('Connector', connectorSpec), NOW);
    expect(values.state).toBe('paused');
    expect(values.status).toBeNull();
  });

  it('moves updated_at to the time of projection once the spec changed (generation > 1)', () => {
    const { values } = project(object('Connector', connectorSpec, { generation: 3 }), NOW);
    expect(values.generation).toBe(3);
    expect(values.created_at).toEqual(new Date(CREATED));
    expect(values.updated_at).toEqual(NOW);
  });

  it('marks an object with a deletionTimestamp as deleting (never as deleted)', () => {
    const { values } = project(
      object('Connector', connectorSpec, { deletionTimestamp: '2026-02-02T00:00:00Z', generation: 2 }),
      NOW,
    );
    expect(values.deleting).toBe(true);
    expect(values.deleted).toBe(false);
  });

  it('projects a DataModel', () => {
    const spec = {
      name: 'orders-dm',
      teamId: TEAM,
      connectorId: REF1,
      entry: 'public.orders',
      enabled: false,
      errorTable: { enabled: false },
    };
    const { table, values } = project(object('DataModel', spec), NOW);
    expect(table).toBe('mirror_datamodels');
    expect(values).toMatchObject({
      id: ID,
      team_id: TEAM,
      name: 'orders-dm',
      connector_id: REF1,
      entry: 'public.orders',
      enabled: false,
      status: null,
    });
    // enabled defaults to true when absent
    const { values: v2 } = project(object('DataModel', { ...spec, enabled: undefined }), NOW);
    expect(v2.enabled).toBe(true);
  });

  it('projects a Subscription', () => {
    const spec = {
      name: 'orders-sub',
      teamId: TEAM,
      datamodelId: REF1,
      targetConnectorId: REF2,
      targetTableName: 'orders',
      mapperConfig: [],
      consumerId: 'c1',
      backfill: true,
      enabled: true,
      errorTable: { enabled: false },
    };
    const { table, values } = project(
      object('Subscription', spec, { status: { observedGeneration: 1 } }),
      NOW,
    );
    expect(table).toBe('mirror_subscriptions');
    expect(values).toMatchObject({
      name: 'orders-sub',
      team_id: TEAM,
      datamodel_id: REF1,
      target_connector_id: REF2,
      enabled: true,
      status: JSON.stringify({ observedGeneration: 1 }),
    });
  });

  it('projects a Pipeline, draft when it has no status', () => {
    const spec = {
      name: 'orders_pipeline',
      teamId: TEAM,
      sourceConnectorId: REF1,
      targetConnectorId: REF2,
      datamodelId: REF3,
      subscriptionId: REF4,
      ownsSource: true,
      ownsTarget: false,
      desiredState: 'draft',
      version: 4,
    };
    const { table, values } = project(object('Pipeline', spec), NOW);
    expect(table).toBe('mirror_pipelines');
    expect(values).toMatchObject({
      name: 'orders_pipeline',
      state: 'draft',
      version: 4,
      source_connector_id: REF1,
      target_connector_id: REF2,
      datamodel_id: REF3,
      subscription_id: REF4,
    });
    expect(project(object('Pipeline', spec, { status: { state: 'live' } }), NOW).values.state).toBe('live');
  });

  it('projects a Warehouse, Draft when it has no status', () => {
    const spec = {
      name: 'dbx',
      teamId: TEAM,
      serverHostname: 'h',
      httpPath: '/p',
      accessToken: { valueFrom: {} },
    };
    const { table, values } = project(object('Warehouse', spec), NOW);
    expect(table).toBe('mirror_warehouses');
    expect(values).toMatchObject({ name: 'dbx', team_id: TEAM, state: 'Draft' });
    expect(project(object('Warehouse', spec, { status: { state: 'Live' } }), NOW).values.state).toBe('Live');
  });

  describe('tolerates malformed specs (kubectl can write anything the CRD schema lets through)', () => {
    it('falls back for missing or mistyped fields of every kind', () => {
      const bad = { name: 7, teamId: 'not-a-uuid', connectorType: 12, desiredState: null, version: 'x' };
      const c = project(object('Connector', bad), NOW).values;
      expect(c).toMatchObject({
        name: ID, // the object's name stands in for a missing human name
        team_id: null,
        connector_type: '',
        direction: 'unknown',
        state: 'paused',
        desired_state: 'stopped',
      });
      expect(
        project(object('Connector', { ...connectorSpec, connectorType: 'NOPE' }), NOW).values.direction,
      ).toBe('unknown');
      expect(project(object('DataModel', {}), NOW).values).toMatchObject({
        connector_id: NIL,
        entry: '',
        enabled: true,
        team_id: null,
      });
      expect(project(object('Subscription', { datamodelId: 'x' }), NOW).values).toMatchObject({
        datamodel_id: NIL,
        target_connector_id: NIL,
        enabled: true,
      });
      expect(project(object('Pipeline', bad), NOW).values).toMatchObject({
        version: 1,
        source_connector_id: NIL,
        state: 'draft',
      });
      expect(project(object('Warehouse', {}), NOW).values).toMatchObject({ name: ID, state: 'Draft' });
    });

    it('survives a spec that is not an object at all', () => {
      for (const kind of ['Connector', 'DataModel', 'Subscription', 'Pipeline', 'Warehouse'] as const) {
        for (const spec of [null, 'text', [1, 2], 5]) {
          const { values } = project(object(kind, spec), NOW);
          expect(values.id).toBe(ID);
          expect(values.team_id).toBeNull();
          expect(values.name).toBe(ID);
        }
      }
    });

    it('keeps columns within their SQL types when status or spec values have the wrong type', () => {
      const c = project(
        object('Connector', connectorSpec, { status: { state: { nested: true } } }),
        NOW,
      ).values;
      expect(c.state).toBe('paused');
      const w = project(object('Warehouse', {}, { status: { state: 5 } }), NOW).values;
      expect(w.state).toBe('Draft');
      const p = project(object('Pipeline', { version: 1.5 }, { status: 'broken' }), NOW).values;
      expect(p.version).toBe(1);
      expect(p.state).toBe('draft');
      const big = project(object('Pipeline', { version: 2 ** 40 }), NOW).values;
      expect(big.version).toBe(1);
    });
  });
});

describe('isMirrorable', () => {
  it('accepts objects named by a lower-case UUID only', () => {
    const named = (name: string) => isMirrorable(object('Connector', connectorSpec, { name }));
    expect(named(ID)).toBe(true);
    expect(named('orders')).toBe(false);
    expect(named(ID.toUpperCase())).toBe(false);
    expect(named(`${ID}-x`)).toBe(false);
    expect(named(`x${ID}`)).toBe(false);
    expect(named(ID.replace(/-/g, ''))).toBe(false);
  });
});
