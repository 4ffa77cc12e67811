import {
  CONNECTOR_INITIAL_STATE,
  workerReplicas,
  type ConnectorSpec,
  type ConnectorStatus,
  type WorkerStatus,
} from '@sluice/shared/catalog';
import { connectorType, secretPaths } from '@sluice/shared/connectors';
import { type ConnectorRead, type ConnectorWorkerRead } from '@sluice/shared/schemas';
import { redactSecrets } from '@sluice/shared/secrets';
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
    // Effective: what start/stop asked for, or a running pipeline that uses it (status.effectiveState).
    desired_state: (status.effectiveState ?? spec.desiredState) === 'running' ? 'running' : 'stopped',
    desired_state_reason: status.effectiveReason ?? null,
    status_message: status.message ?? null,
    worker: toWorkerRead(status.worker),
    datamodel_ids: datamodelIds,
    // What its workers run with (a source: 1, whatever a spec applied without the CRD's rule says).
    replicas: workerReplicas(spec),
    ready_replicas: status.replicas ?? 0,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}

/** `status.worker` in the API's shape (docs/data-plane.md, "Worker restarts"). */
function toWorkerRead(w: WorkerStatus | undefined): ConnectorWorkerRead | null {
  if (!w) return null;
  const t = w.lastTermination;
  return {
    restarts: w.restarts,
    consecutive_failures: w.consecutiveFailures,
    last_termination: t
      ? {
          reason: t.reason,
          exit_code: t.exitCode ?? null,
          signal: t.signal ?? null,
          message: t.message ?? null,
          finished_at: t.finishedAt,
        }
      : null,
  };
}
