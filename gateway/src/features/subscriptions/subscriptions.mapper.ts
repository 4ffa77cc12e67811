import type { SubscriptionRead, SubscriptionSpec } from '@sluice/shared';
import { redactMapper } from '../../catalog/mapper-secrets.js';
import { managedSecretName } from '../../catalog/secrets.js';
import { toIso } from '../../db/timestamps.js';
import type { SubscriptionRecord } from './subscriptions.repository.js';

export function toSubscriptionRead(row: SubscriptionRecord): SubscriptionRead {
  const spec = row.spec as SubscriptionSpec;
  return {
    id: row.id,
    name: row.name,
    datamodel_id: row.datamodel_id,
    target_connector_id: row.target_connector_id,
    team_id: row.team_id as string,
    target_table_name: spec.targetTableName,
    mapper_config: redactMapper(spec.mapperConfig ?? [], managedSecretName('subscription', row.id)),
    consumer_id: spec.consumerId,
    backfill: spec.backfill,
    enabled: row.enabled,
    error_table_enabled: spec.errorTable?.enabled ?? false,
    error_table_name: spec.errorTable?.name ?? null,
    error_table_target_id: spec.errorTable?.targetConnectorId ?? null,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}
