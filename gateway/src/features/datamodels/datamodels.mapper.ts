import type { DataModelSpec, Monitoring } from '@sluice/shared/catalog';
import type { DataModelRead, MonitoringRead } from '@sluice/shared/schemas';
import { toIso } from '../../db/timestamps.js';
import type { DataModelRecord } from './datamodels.repository.js';

export function toDataModelRead(row: DataModelRecord): DataModelRead {
  const spec = row.spec as DataModelSpec;
  return {
    id: row.id,
    name: row.name,
    connector_id: row.connector_id,
    team_id: row.team_id as string,
    entry: row.entry,
    enabled: row.enabled,
    source_topic: spec.sourceTopic ?? null,
    target_topic: spec.targetTopic ?? null,
    error_table_enabled: spec.errorTable?.enabled ?? false,
    error_table_name: spec.errorTable?.name ?? null,
    error_table_target_id: spec.errorTable?.targetConnectorId ?? null,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}

/** The figures of a status (the operator's monitoring collector fills them); zeros until a worker reported. */
export function toMonitoringRead(
  id: string,
  monitoring: Monitoring | undefined,
  retention: Pick<MonitoringRead, 'retained_wal_bytes' | 'retained_wal_measured_at' | 'binlog'>,
): MonitoringRead {
  return {
    id,
    messages_in: monitoring?.messagesIn ?? 0,
    messages_out: monitoring?.messagesOut ?? 0,
    errors: monitoring?.errors ?? 0,
    last_event_at: monitoring?.lastEventTime ?? null,
    latency_ms: monitoring?.latencyMs ?? null,
    ...retention,
    reported_at: monitoring?.reportedAt ?? null,
    as_of: new Date().toISOString(),
  };
}
