import { cdcNames } from '@sluice/shared/connectors';
import { type OutboundPolicy } from '@sluice/shared/net';
import { pgWhere, quoteIdent } from '../../systems/postgres/connection.js';
import { describePgFailure } from '../../systems/postgres/errors.js';
import { PostgresCdcError, type PostgresSourceSettings } from './contract.js';
import { connector, MARK_CREATED, waitForSlotRelease } from './setup.js';

/**
 * Drops the connector's slot and, when Sluice created it, its publication
 * (called when the connector is deleted). Missing ones are fine; a slot still
 * in use by a running worker is an error (stop the worker first).
 */
export async function dropPostgresCdc(
  settings: PostgresSourceSettings,
  options: { connectorId: string; policy?: OutboundPolicy },
): Promise<void> {
  const { slot, publication } = cdcNames(options.connectorId, settings);
  const client = await connector(settings, options.policy)(false);
  try {
    const { rows } = await client.query<{ active: boolean }>(
      'select active from pg_replication_slots where slot_name = $1 and database = current_database()',
      [slot],
    );
    if (rows[0]?.active) await waitForSlotRelease(client, slot);
    if (rows[0]) await client.query('select pg_drop_replication_slot($1)', [slot]);
    const pub = await client.query<{ comment: string | null }>(
      `select obj_description(oid, 'pg_publication') as comment from pg_publication where pubname = $1`,
      [publication],
    );
    if ((pub.rows[0]?.comment ?? '').startsWith(MARK_CREATED)) {
      await client.query(`drop publication if exists ${quoteIdent(publication)}`);
    }
  } catch (error) {
    if (error instanceof PostgresCdcError) throw error;
    throw new PostgresCdcError(
      `Dropping the capture of ${settings.database} failed: ${describePgFailure(error, pgWhere(settings))}`,
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}
