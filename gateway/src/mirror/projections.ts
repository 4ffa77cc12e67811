import {
  CONNECTOR_INITIAL_STATE,
  PIPELINE_INITIAL_STATE,
  WAREHOUSE_INITIAL_STATE,
  type ConnectorResource,
  type DataModelResource,
  type PipelineResource,
  type SubscriptionResource,
  type WarehouseResource,
} from '@sluice/shared/catalog';
import { connectorType } from '@sluice/shared/connectors';
import { type ClusterObject, type SluiceKind } from '@sluice/shared/ports';
import { isLowerCaseUuid } from '@sluice/shared/schemas';

// Object → mirror row, one pure function per kind. The columns a list filters
// or joins on are projected out of spec/status; the rest stays in the jsonb
// copies, which the features map to API bodies.

export const MIRROR_TABLES = {
  Connector: 'mirror_connectors',
  DataModel: 'mirror_datamodels',
  Subscription: 'mirror_subscriptions',
  Pipeline: 'mirror_pipelines',
  Warehouse: 'mirror_warehouses',
} as const satisfies Record<SluiceKind, string>;
export type MirrorTable = (typeof MIRROR_TABLES)[SluiceKind];

export type MirrorValues = Record<string, string | number | boolean | Date | null>;

/**
 * The object a mirror row copies, as far as a function of its name and spec
 * needs it (topic names, worker configurations): the row's jsonb `spec` is the
 * object's spec and its `id` the object's name. Status and labels are not in
 * it; read them from the row's own columns.
 */
export const resourceOf = <T extends ClusterObject>(id: string, spec: unknown): T =>
  ({ metadata: { name: id }, spec }) as unknown as T;

/** The mirror only holds objects named by a UUID: the name is the REST identifier (docs/architecture.md). */
export const isMirrorable = (o: ClusterObject): boolean => isLowerCaseUuid(o.metadata.name);

const uuidOrNull = (v: unknown): string | null => (isLowerCaseUuid(v) ? v : null);
const uuidOrNil = (v: unknown): string => uuidOrNull(v) ?? '00000000-0000-0000-0000-000000000000';
const str = (v: unknown, fallback = ''): string => (typeof v === 'string' ? v : fallback);
/** Nothing in the cluster checks a spec's shape (kubectl, a CRD without a schema): read it defensively. */
const fields = (v: unknown): Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
/** The column `integer` (int4) holds it. */
const int4 = (v: unknown, fallback: number): number =>
  Number.isInteger(v) && Math.abs(v as number) <= 2_147_483_647 ? (v as number) : fallback;

function common(o: ClusterObject, now: Date): MirrorValues {
  const spec = fields(o.spec);
  const created = o.metadata.creationTimestamp ? new Date(o.metadata.creationTimestamp) : now;
  return {
    id: o.metadata.name,
    namespace: o.metadata.namespace,
    team_id: uuidOrNull(spec.teamId),
    name: str(spec.name, o.metadata.name),
    resource_version: o.metadata.resourceVersion ?? '0',
    generation: o.metadata.generation ?? 1,
    spec: JSON.stringify(o.spec ?? {}),
    status: o.status === undefined || o.status === null ? null : JSON.stringify(o.status),
    deleting: Boolean(o.metadata.deletionTimestamp),
    deleted: false,
    created_at: created,
    // An object first seen at generation 1 was last changed when created.
    updated_at: (o.metadata.generation ?? 1) <= 1 ? created : now,
  };
}

function connector(o: ConnectorResource): MirrorValues {
  const spec = fields(o.spec);
  return {
    connector_type: str(spec.connectorType),
    direction: connectorType(str(spec.connectorType))?.direction ?? 'unknown',
    state: str(fields(o.status).state, CONNECTOR_INITIAL_STATE),
    // What the operator converges to (its own spec or a pipeline's), once it said.
    desired_state: str(fields(o.status).effectiveState, str(spec.desiredState, 'stopped')),
  };
}
function datamodel(o: DataModelResource): MirrorValues {
  const spec = fields(o.spec);
  return {
    connector_id: uuidOrNil(spec.connectorId),
    entry: str(spec.entry),
    enabled: spec.enabled !== false,
  };
}
function subscription(o: SubscriptionResource): MirrorValues {
  const spec = fields(o.spec);
  return {
    datamodel_id: uuidOrNil(spec.datamodelId),
    target_connector_id: uuidOrNil(spec.targetConnectorId),
    // Delivered or not: its own switch or a pipeline's (status.effectiveState), once the operator said.
    enabled: effectiveEnabled(o),
  };
}
/** A subscription's effective switch (effective-state.ts) as the operator last wrote it, else its spec's. */
export function effectiveEnabled(o: SubscriptionResource): boolean {
  const effective = fields(o.status).effectiveState;
  return effective === 'enabled' || effective === 'disabled'
    ? effective === 'enabled'
    : fields(o.spec).enabled !== false;
}
function pipeline(o: PipelineResource): MirrorValues {
  const spec = fields(o.spec);
  return {
    state: str(fields(o.status).state, PIPELINE_INITIAL_STATE),
    version: int4(spec.version, 1),
    source_connector_id: uuidOrNil(spec.sourceConnectorId),
    target_connector_id: uuidOrNil(spec.targetConnectorId),
    datamodel_id: uuidOrNil(spec.datamodelId),
    subscription_id: uuidOrNil(spec.subscriptionId),
  };
}
const warehouse = (o: WarehouseResource): MirrorValues => ({
  state: str(fields(o.status).state, WAREHOUSE_INITIAL_STATE),
});

/** The mirror row of an object, as it is now. */
export function project(o: ClusterObject, now = new Date()): { table: MirrorTable; values: MirrorValues } {
  const base = common(o, now);
  switch (o.kind) {
    case 'Connector':
      return { table: MIRROR_TABLES.Connector, values: { ...base, ...connector(o as ConnectorResource) } };
    case 'DataModel':
      return { table: MIRROR_TABLES.DataModel, values: { ...base, ...datamodel(o as DataModelResource) } };
    case 'Subscription':
      return {
        table: MIRROR_TABLES.Subscription,
        values: { ...base, ...subscription(o as SubscriptionResource) },
      };
    case 'Pipeline':
      return { table: MIRROR_TABLES.Pipeline, values: { ...base, ...pipeline(o as PipelineResource) } };
    case 'Warehouse':
      return { table: MIRROR_TABLES.Warehouse, values: { ...base, ...warehouse(o as WarehouseResource) } };
  }
}
