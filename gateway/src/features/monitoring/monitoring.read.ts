import type { BinlogStatus } from '@sluice/shared/catalog';
import type { MonitoringRead } from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { unreadBinlogStatus } from './monitoring.binlog.js';
import { findSourceConnector } from './monitoring.repository.js';
import { unreadSlotStatus } from './monitoring.service.js';

// What the monitoring endpoints (a data model's monitoring, a pipeline's
// latency) show of what a source makes its server keep: a PostgreSQL
// source's replication slot, a MySQL or MariaDB source's binary logs.

export type SourceRetentionRead = Pick<
  MonitoringRead,
  'retained_wal_bytes' | 'retained_wal_measured_at' | 'binlog'
>;

/**
 * The figures of the connector's record (measured again now when paused and
 * stale), not the copy in an object's status.monitoring (the last figure a
 * worker reported), so a slot dropped while paused shows as gone; nulls for
 * sources without them.
 */
export async function sourceRetentionRead(
  ctx: GatewayContext,
  sourceConnectorId: string,
): Promise<SourceRetentionRead> {
  const row = await findSourceConnector(ctx.db, sourceConnectorId);
  const slot = row ? await unreadSlotStatus(ctx, row) : undefined;
  const binlog = row ? await unreadBinlogStatus(ctx, row) : undefined;
  return {
    retained_wal_bytes: slot?.retainedWalBytes ?? null,
    retained_wal_measured_at: slot?.measuredAt ?? null,
    binlog: binlog ? binlogRead(binlog) : null,
  };
}

function binlogRead(b: BinlogStatus): NonNullable<SourceRetentionRead['binlog']> {
  return {
    needed_file: b.neededFile,
    oldest_file: b.oldestFile,
    current_file: b.currentFile,
    logs_before_needed: b.logsBeforeNeeded,
    lag_bytes: b.lagBytes,
    held_bytes: b.heldBytes,
    expire_seconds: b.expireSeconds,
    events_per_second: b.eventsPerSecond ?? 0,
    transactions_per_second: b.transactionsPerSecond ?? 0,
    measured_at: b.measuredAt,
  };
}
