import {
  type ConnectorSpec,
  type DataModelSpec,
  type PipelineSpec,
  type PipelineState,
  type PipelineStatus,
  type SubscriptionSpec,
} from '@sluice/shared/catalog';
import { type PipelineConfiguration, type PipelineRead } from '@sluice/shared/schemas';
import { toIso } from '../../db/timestamps.js';
import { toConnectorRead } from '../connectors/connectors.mapper.js';
import { toSubscriptionRead } from '../subscriptions/subscriptions.mapper.js';
import type { PipelineRecord } from './pipelines.repository.js';

/** The objects a pipeline reads from: its connectors, data model and subscription (mirror copies). */
export interface PipelineBundle {
  source: { id: string; spec: ConnectorSpec; status: unknown; created_at: Date; updated_at: Date };
  target: { id: string; spec: ConnectorSpec; status: unknown; created_at: Date; updated_at: Date };
  datamodel: { id: string; spec: DataModelSpec };
  subscription: { id: string; spec: SubscriptionSpec; created_at: Date; updated_at: Date };
}

function connectorView(c: PipelineBundle['source'], teamName: string) {
  const read = toConnectorRead(
    {
      id: c.id,
      name: c.spec.name,
      team_id: c.spec.teamId,
      connector_type: c.spec.connectorType,
      direction: '',
      state: '',
      desired_state: '',
      spec: c.spec,
      status: c.status,
      created_at: c.created_at,
      updated_at: c.updated_at,
      team_name: teamName,
    },
    [],
  );
  return { name: read.name, type: read.connector_type, config: read.json_configuration };
}

function subscriptionView(b: PipelineBundle) {
  return toSubscriptionRead({
    id: b.subscription.id,
    name: b.subscription.spec.name,
    team_id: b.subscription.spec.teamId,
    datamodel_id: b.subscription.spec.datamodelId,
    target_connector_id: b.subscription.spec.targetConnectorId,
    enabled: b.subscription.spec.enabled,
    spec: b.subscription.spec,
    created_at: b.subscription.created_at,
    updated_at: b.subscription.updated_at,
  });
}

/** The flattened fields of a pipeline (secrets `<redacted>`): the 201 body, the export. */
export function flatFields(row: PipelineRecord, b: PipelineBundle) {
  const spec = row.spec as PipelineSpec;
  const source = connectorView(b.source, row.team_name);
  const target = connectorView(b.target, row.team_name);
  const sub = subscriptionView(b);
  const dm = b.datamodel.spec;
  return {
    existing_source_id: spec.ownsSource ? null : b.source.id,
    source_name: source.name,
    source_type: source.type,
    source_config: source.config,
    existing_target_id: spec.ownsTarget ? null : b.target.id,
    target_name: target.name,
    target_type: target.type,
    target_config: target.config,
    datamodel_source_topic: dm.entry,
    datamodel_target_topic: dm.targetTopic ?? null,
    datamodel_error_table_enabled: dm.errorTable?.enabled ?? false,
    datamodel_error_table_name: dm.errorTable?.name ?? null,
    datamodel_error_table_target_id: dm.errorTable?.targetConnectorId ?? null,
    subscription_target_table_name: sub.target_table_name,
    subscription_backfill: sub.backfill,
    subscription_mapper_config: sub.mapper_config,
    subscription_consumer_id: sub.consumer_id,
    subscription_error_table_enabled: sub.error_table_enabled,
    subscription_error_table_name: sub.error_table_name,
    subscription_error_table_target_id: sub.error_table_target_id,
  };
}

export function toPipelineRead(row: PipelineRecord, b: PipelineBundle): PipelineRead {
  const spec = row.spec as PipelineSpec;
  const flat = flatFields(row, b);
  return {
    id: row.id,
    name: row.name,
    state: row.state as PipelineState,
    version: row.version,
    team_id: row.team_id as string,
    team_name: row.team_name,
    ...flat,
    source_connector_id: b.source.id,
    target_connector_id: b.target.id,
    datamodel_id: b.datamodel.id,
    subscription_id: b.subscription.id,
    json_configuration: {
      source_name: flat.source_name,
      source_type: flat.source_type,
      source_config: flat.source_config,
      target_name: flat.target_name,
      target_type: flat.target_type,
      target_config: flat.target_config,
      smt_name: spec.smtName ?? null,
      smt_config: flat.subscription_mapper_config,
      draft_step: spec.draftStep ?? null,
    },
    status_message: (row.status as PipelineStatus | null)?.message ?? null,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}

export function toPipelineConfiguration(row: PipelineRecord, b: PipelineBundle): PipelineConfiguration {
  const flat = flatFields(row, b);
  const spec = row.spec as PipelineSpec;
  // An existing connector is referenced, not copied: its trio is null.
  return {
    name: row.name,
    team_id: row.team_id as string,
    version: row.version,
    ...flat,
    ...(spec.ownsSource ? {} : { source_name: null, source_type: null, source_config: null }),
    ...(spec.ownsTarget ? {} : { target_name: null, target_type: null, target_config: null }),
  };
}

export function toPipelineStatusRead(row: PipelineRecord) {
  return {
    id: row.id,
    name: row.name,
    state: row.state as PipelineState,
    version: row.version,
    status_message: (row.status as PipelineStatus | null)?.message ?? null,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}
