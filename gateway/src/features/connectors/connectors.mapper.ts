import {
  CONNECTOR_INITIAL_STATE,
  connectorType,
  redactSecrets,
  secretPaths,
  type ConnectorRead,
  type ConnectorSpec,
  type ConnectorStatus,
} from '@sluice/shared';
import { managedSecretName } from '../../catalog/secrets.js';
import { toIso } from '../../db/timestamps.js';
import type { ConnectorRecord } from './connectors.repository.js';

/** Mirror row → API body; secrets read back as `<redacted>` (spec 2.14). */
export function toConnectorRead(
  row: Omit<ConnectorRecord, 'namespace'>,
  datamodelIds: string[],
): ConnectorRead {
  const spec = row.spec as ConnectorSpec;
  const status = (row.status ?? {}) as ConnectorStatus;
  const def = connectorType(row.connector_type);
  const config = (spec.configuration ?? {}) as Record<string, unknown>;
  return {
    id: row.id,
    name: row.name,
    connector_type: spec.connectorType,
    direction: def?.direction ?? 'source',
    topics_config_key: def?.topics_config_key ?? null,
    json_configuration: def
      ? redactSecrets(config, secretPaths(def.type), managedSecretName('connector', row.id))
      : {},
    team_id: row.team_id as string,
    team_name: row.team_name,
    status: (status.state ?? CONNECTOR_INITIAL_STATE) as ConnectorRead['status'],
    desired_state: spec.desiredState === 'running' ? 'running' : 'stopped',
    status_message: status.message ?? null,
    datamodel_ids: datamodelIds,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}
