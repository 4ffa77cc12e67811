import { dropPostgresCdc, type PostgresSourceSettings } from '@sluice/operator';
import { connectorType, type ConnectorSpec } from '@sluice/shared';
import type { GatewayContext } from '../../context.js';
import { preflightPolicy, resolvedStoredConfiguration } from '../preflight/preflight.service.js';

// A PostgreSQL source holds a replication slot on the user's database, and a
// slot nobody reads makes the server keep WAL for ever (its disk fills up).
// Deleting the connector therefore drops the slot and the publication Sluice
// created. The configuration is resolved before the connector and its secret
// are deleted; the drop runs after (the operator stops the worker first, and
// the drop waits up to 10 s for the slot to be released). A source that
// cannot be reached does not block the delete: the slot's name is logged for
// a person to drop it (docs/data-plane-postgres.md).

export interface CaptureRelease {
  (): Promise<void>;
}

/** Prepares the release of a connector's capture; a no-op for other types. */
export async function prepareCaptureRelease(
  ctx: GatewayContext,
  row: { id: string; connector_type: string; spec: unknown },
): Promise<CaptureRelease> {
  const def = connectorType(row.connector_type);
  if (!def || def.type !== 'POSTGRES_SOURCE') return async () => undefined;
  let settings: PostgresSourceSettings;
  try {
    const config = (row.spec as ConnectorSpec).configuration;
    settings = (await resolvedStoredConfiguration(
      ctx,
      def,
      row.id,
      config,
    )) as unknown as PostgresSourceSettings;
  } catch (e) {
    return async () => warn(ctx, row.id, e);
  }
  return async () => {
    try {
      await dropPostgresCdc(settings, { connectorId: row.id, policy: preflightPolicy(ctx) });
    } catch (e) {
      warn(ctx, row.id, e);
    }
  };
}

function warn(ctx: GatewayContext, connector: string, e: unknown): void {
  ctx.log.warn(
    { connector, err: e instanceof Error ? e.message : String(e) },
    'could not drop the replication slot of a deleted PostgreSQL source: drop it on the source (pg_drop_replication_slot)',
  );
}
