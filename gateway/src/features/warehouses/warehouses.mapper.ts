import { WAREHOUSE_INITIAL_STATE, type WarehouseSpec, type WarehouseStatus } from '@sluice/shared/catalog';
import { isSecretRef } from '@sluice/shared/connectors';
import { warehouseIdOf } from '@sluice/shared/databricks';
import { REDACTED, type WarehouseRead } from '@sluice/shared/schemas';
import { redactSecrets } from '@sluice/shared/secrets';
import { managedSecretName } from '../../catalog/secrets.js';
import { toIso } from '../../db/timestamps.js';
import type { WarehouseRecord } from './warehouses.repository.js';

/** The key of the access token in a warehouse's managed secret (and its field name in REST bodies). */
export const TOKEN_FIELD = 'access_token';

/** Mirror row → API body; the token reads back as `<redacted>` (or the user's own reference). */
export function toWarehouseRead(row: WarehouseRecord): WarehouseRead {
  const spec = row.spec as WarehouseSpec;
  const status = (row.status ?? {}) as WarehouseStatus;
  const path = String(spec.httpPath ?? '');
  const id = warehouseIdOf(path);
  const shown = redactSecrets(
    { [TOKEN_FIELD]: spec.accessToken },
    [TOKEN_FIELD],
    managedSecretName('warehouse', row.id),
  )[TOKEN_FIELD];
  // Whatever else kubectl may have written there is not shown either.
  const token = isSecretRef(shown) ? shown : REDACTED;
  return {
    id: row.id,
    name: row.name,
    team_id: row.team_id as string,
    team_name: row.team_name,
    server_hostname: String(spec.serverHostname ?? ''),
    http_path: path,
    warehouse_id: id.ok ? id.value : '',
    access_token: token,
    catalog: spec.catalog ?? null,
    schema: spec.schema ?? null,
    status: (status.state ?? WAREHOUSE_INITIAL_STATE) as WarehouseRead['status'],
    status_message: status.message ?? null,
    tested_at: status.testedAt ?? null,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}
