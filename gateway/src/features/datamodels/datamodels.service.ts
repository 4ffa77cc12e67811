import { type ConnectorResource, type DataModelResource, type DataModelStatus } from '@sluice/shared/catalog';
import { connectorType } from '@sluice/shared/connectors';
import {
  type DataModelListQuery,
  type DataModelRead,
  type DataModelSchemaRead,
  type ErrorTableUpdate,
  type MonitoringRead,
} from '@sluice/shared/schemas';
import { requireTeam } from '../../auth/access.js';
import type { Principal } from '../../auth/principal.js';
import { nextErrorTable } from '../../catalog/error-table.js';
import { replaceStep } from '../../catalog/secrets.js';
import type { GatewayContext } from '../../context.js';
import { toIso } from '../../db/timestamps.js';
import { conflict, notFound } from '../../http/errors.js';
import { offsetOf, pageOf } from '../../http/pagination.js';
import { sourceRetentionRead } from '../monitoring/monitoring.read.js';
import { findVersion } from '../schemas/schemas.repository.js';
import { discoveredSchema } from './datamodels.discovery.js';
import { schemaFields } from './datamodels.fields.js';
import { toDataModelRead, toMonitoringRead } from './datamodels.mapper.js';
import * as repo from './datamodels.repository.js';

export async function loadDataModel(ctx: GatewayContext, p: Principal, id: string) {
  const row = await repo.findDataModel(ctx.db, id);
  if (!row) throw notFound('Data model not found');
  await requireTeam(ctx.db, p, row.team_id as string, 'member');
  return row;
}

async function current(ctx: GatewayContext, id: string): Promise<DataModelResource> {
  const dm = await ctx.catalog.get<DataModelResource>('DataModel', id);
  if (!dm) throw notFound('Data model not found');
  return dm;
}

export async function getDataModel(ctx: GatewayContext, p: Principal, id: string): Promise<DataModelRead> {
  return toDataModelRead(await loadDataModel(ctx, p, id));
}

export async function listDataModels(ctx: GatewayContext, p: Principal, q: DataModelListQuery) {
  if (q.team_id) await requireTeam(ctx.db, p, q.team_id, 'member');
  const { rows, total } = await repo.listDataModels(ctx.db, p, q, offsetOf(q.page, q.size), q.size);
  return pageOf(rows.map(toDataModelRead), total, q.page, q.size);
}

export async function getMonitoring(ctx: GatewayContext, p: Principal, id: string): Promise<MonitoringRead> {
  const row = await loadDataModel(ctx, p, id);
  const monitoring = (row.status as DataModelStatus | null)?.monitoring;
  return toMonitoringRead(id, monitoring, await sourceRetentionRead(ctx, row.connector_id));
}

/**
 * The schema of a data model: its source table from the source's catalog
 * (database sources), else the latest version registered under the data
 * model's name in the schema registry (POST /schemas/{name}), else what its
 * topic's recent messages show (Kafka sources), else nothing yet.
 */
export async function getSchema(ctx: GatewayContext, p: Principal, id: string): Promise<DataModelSchemaRead> {
  const row = await loadDataModel(ctx, p, id);
  const discovered = await discoveredSchema(ctx, {
    id,
    connector_id: row.connector_id,
    entry: row.entry,
    status: row.status,
  });
  const none = { subject: null, version: null, schema_type: null, schema: null } as const;
  const fromDiscovery = (d: NonNullable<typeof discovered>): DataModelSchemaRead => ({
    datamodel_id: id,
    source: d.origin ?? 'worker',
    ...none,
    fields: d.fields.map((f) => ({ name: f.name, type: f.type, nullable: f.nullable ?? true })),
    updated_at: d.discoveredAt,
  });
  // A table's columns are the truth; a schema registered by a person beats an inference from messages.
  if (discovered && discovered.origin !== 'messages') return fromDiscovery(discovered);
  const registered = await findVersion(ctx.db, row.name, null);
  if (registered) {
    return {
      datamodel_id: id,
      source: 'registry',
      subject: registered.subject,
      version: registered.version,
      schema_type: registered.schema_type,
      schema: registered.schema,
      fields: schemaFields(registered.schema_type, registered.schema),
      updated_at: toIso(registered.created_at),
    };
  }
  if (discovered) return fromDiscovery(discovered);
  return { datamodel_id: id, source: 'none', ...none, fields: [], updated_at: null };
}

export async function updateErrorTable(
  ctx: GatewayContext,
  p: Principal,
  id: string,
  body: ErrorTableUpdate,
): Promise<DataModelRead> {
  const row = await loadDataModel(ctx, p, id);
  const dm = await current(ctx, id);
  const errorTable = await nextErrorTable(ctx, row.team_id as string, dm.spec.errorTable, body, ['body']);
  await ctx.catalog.runSteps([replaceStep(ctx, dm, { spec: { ...dm.spec, errorTable } })]);
  return getDataModel(ctx, p, id);
}

/** Enable or disable capture of one data model; the source worker restarts to apply it (spec 3.2). */
export async function setEnabled(ctx: GatewayContext, p: Principal, id: string, enabled: boolean) {
  await loadDataModel(ctx, p, id);
  const dm = await current(ctx, id);
  if (dm.spec.enabled !== enabled) {
    await ctx.catalog.runSteps([replaceStep(ctx, dm, { spec: { ...dm.spec, enabled } })]);
  }
  return getDataModel(ctx, p, id);
}

/**
 * Spec 4.5 rule 3: deleting a data model stops capturing its entry for good —
 * the entry leaves the connector's capture list. Refused while something
 * delivers it, and for the last entry of a source (delete the connector).
 */
export async function deleteDataModel(ctx: GatewayContext, p: Principal, id: string): Promise<void> {
  await loadDataModel(ctx, p, id);
  const dm = await current(ctx, id);
  const users = await repo.datamodelUsers(ctx.db, id);
  if (users.length > 0)
    throw conflict(`The data model is delivered by ${users.join(', ')}: delete those first`);
  const connector = await ctx.catalog.get<ConnectorResource>('Connector', dm.spec.connectorId);
  const key = connector ? connectorType(connector.spec.connectorType)?.topics_config_key : undefined;
  if (connector && key === 'whitelist') {
    const list = (connector.spec.configuration.whitelist as string[] | undefined) ?? [];
    const rest = list.filter((e) => e !== dm.spec.entry);
    if (rest.length === 0) {
      throw conflict(
        'This is the last table of the connector, which needs one: delete the connector instead',
      );
    }
    await ctx.catalog.runSteps([
      replaceStep(ctx, connector, {
        spec: { ...connector.spec, configuration: { ...connector.spec.configuration, whitelist: rest } },
      }),
    ]);
  } else if (connector && key === 'topic') {
    throw conflict('A Kafka source has one topic and its data model: delete the connector instead');
  }
  await ctx.catalog.delete('DataModel', id);
}
