import { measureSlotRetention, type PostgresSourceSettings } from '@sluice/dataplane';
import { type ConnectorSpec, type ConnectorStatus, type ReplicationSlotStatus } from '@sluice/shared/catalog';
import { connectorType } from '@sluice/shared/connectors';
import type { GatewayContext } from '../../context.js';
import { outboundPolicy } from '../../connections/outbound.js';
import { resolvedStoredConfiguration } from '../../connections/stored-configuration.js';
import type { SlotSourceRow } from './monitoring.repository.js';

// While a PostgreSQL source is paused no worker reads its replication slot,
// and the source server keeps WAL for it — exactly when someone must see the
// figure. The gateway holds the stored secrets, so it measures such slots
// itself: on demand (the monitoring and latency endpoints) and periodically
// (monitoring.runner.ts), under the outbound-address policy of its pre-flight
// checks, with a short deadline. The result goes to the connector's
// status.replicationSlot, where the operator's planner reads it (the
// Degraded condition) — docs/data-plane.md, "Monitoring".

/** Deadline of one measurement (connect, authenticate, answer). */
export const SLOT_MEASURE_TIMEOUT_MS = 5_000;

/** States in which no worker reads the slot. */
const UNREAD = new Set(['paused', 'error']);

/**
 * The slot of `row` as recorded, measured again first when no worker reads
 * it and the record is older than the monitoring interval. A source that
 * cannot be reached keeps its last record (logged, never thrown: a read
 * endpoint must not fail for it).
 */
export async function unreadSlotStatus(
  ctx: GatewayContext,
  row: SlotSourceRow,
): Promise<ReplicationSlotStatus | undefined> {
  const recorded = (row.status as ConnectorStatus | null)?.replicationSlot;
  const def = connectorType(row.connector_type);
  if (def?.type !== 'POSTGRES_SOURCE' || !UNREAD.has(row.state)) return recorded;
  const age = recorded ? Date.now() - Date.parse(recorded.measuredAt) : Infinity;
  if (age < ctx.config.monitoring.intervalMs) return recorded;
  try {
    const settings = (await resolvedStoredConfiguration(
      ctx,
      def,
      row.id,
      (row.spec as ConnectorSpec).configuration,
    )) as unknown as PostgresSourceSettings;
    const measured = await measureSlotRetention(settings, {
      connectorId: row.id,
      policy: outboundPolicy(ctx),
      timeoutMs: SLOT_MEASURE_TIMEOUT_MS,
    });
    if (measured.retainedWalBytes === null) {
      // No slot (dropped by hand, or never created): nothing is retained, and a Degraded must clear.
      if (recorded) await ctx.catalog.patchStatus('Connector', row.id, { replicationSlot: null });
      return undefined;
    }
    const replicationSlot: ReplicationSlotStatus = {
      name: measured.slot,
      retainedWalBytes: measured.retainedWalBytes,
      measuredAt: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    };
    await ctx.catalog.patchStatus('Connector', row.id, { replicationSlot });
    return replicationSlot;
  } catch (e) {
    ctx.log.warn(
      { connector: row.id, err: e instanceof Error ? e.message : String(e) },
      'could not measure the replication slot of a paused PostgreSQL source',
    );
    return recorded;
  }
}
