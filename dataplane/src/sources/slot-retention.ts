import type pg from 'pg';
import { cdcNames } from '@sluice/shared/connectors';
import { type OutboundPolicy } from '@sluice/shared/net';
import { openSession, pgWhere } from '../systems/postgres/connection.js';
import { describePgFailure } from '../systems/postgres/errors.js';
import { PostgresCdcError, type PostgresSourceSettings } from './postgres-cdc/contract.js';

// How much WAL the connector's replication slot makes the source server keep:
// `pg_current_wal_lsn() - restart_lsn`. A slot nobody reads (a paused
// pipeline) holds WAL until the source's disk is full, so this figure is
// measured by the running source worker and, while none runs, by the gateway
// (docs/data-plane.md, "Monitoring"). One short-lived connection per
// measurement: a capture mid-snapshot keeps its own connection busy for long.

export interface SlotRetention {
  slot: string;
  /** Bytes of WAL the server retains for the slot; null when the slot does not exist (yet). */
  retainedWalBytes: number | null;
}

export async function measureSlotRetention(
  settings: PostgresSourceSettings,
  options: { connectorId: string; policy?: OutboundPolicy; timeoutMs?: number },
): Promise<SlotRetention> {
  const { slot } = cdcNames(options.connectorId, settings);
  const timeoutMs = options.timeoutMs ?? 10_000;
  let client: pg.Client | undefined;
  try {
    client = await openSession(settings, {
      ...(options.policy ? { policy: options.policy } : {}),
      applicationName: 'sluice-slot-retention',
      connectTimeoutMs: timeoutMs,
      queryTimeoutMs: timeoutMs,
    });
    const { rows } = await client.query<{ bytes: string | null }>(
      `select pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::bigint::text as bytes
         from pg_replication_slots where slot_name = $1 and database = current_database()`,
      [slot],
    );
    const bytes = rows[0]?.bytes;
    return { slot, retainedWalBytes: bytes == null ? null : Math.max(0, Number(bytes)) };
  } catch (error) {
    throw new PostgresCdcError(
      `Measuring replication slot ${slot} failed: ${describePgFailure(error, pgWhere(settings))}`,
    );
  } finally {
    await client?.end().catch(() => undefined);
  }
}
