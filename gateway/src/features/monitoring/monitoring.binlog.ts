import {
  measureBinlogRetention,
  platformStream,
  readRecordedPosition,
  type MysqlSourceSettings,
} from '@sluice/dataplane';
import { type BinlogStatus, type ConnectorSpec, type ConnectorStatus } from '@sluice/shared/catalog';
import { connectorType } from '@sluice/shared/connectors';
import type { GatewayContext } from '../../context.js';
import { outboundPolicy } from '../../connections/outbound.js';
import { resolvedStoredConfiguration } from '../../connections/stored-configuration.js';
import type { SlotSourceRow } from './monitoring.repository.js';
import { SLOT_MEASURE_TIMEOUT_MS } from './monitoring.service.js';

// While a MySQL or MariaDB source is paused no worker measures its binary
// logs, and the server may purge the one its recorded position needs —
// exactly when someone must see it coming. As for a paused PostgreSQL
// source's slot (monitoring.service.ts), the gateway measures them itself:
// the position recorded on the platform broker (sluice-position.<id>)
// against SHOW BINARY LOGS, into the connector's status.binlog, where the
// operator's planner reads it (the Degraded condition) —
// docs/data-plane-mysql.md, "Monitoring".

/** States in which no worker reads the binary logs. */
const UNREAD = new Set(['paused', 'error']);
const MYSQL_TYPES = new Set(['MYSQL_SOURCE', 'MARIADB_SOURCE']);

/**
 * The binary log figures of `row` as recorded, measured again first when no
 * worker reads the logs and the record is older than the monitoring
 * interval. A source or broker that cannot be reached keeps the last record
 * (logged, never thrown); a connector with no recorded position (never past
 * its snapshot) has nothing to guard.
 */
export async function unreadBinlogStatus(
  ctx: GatewayContext,
  row: SlotSourceRow,
): Promise<BinlogStatus | undefined> {
  const recorded = (row.status as ConnectorStatus | null)?.binlog;
  const def = connectorType(row.connector_type);
  if (!def || !MYSQL_TYPES.has(def.type) || !UNREAD.has(row.state)) return recorded;
  const age = recorded ? Date.now() - Date.parse(recorded.measuredAt) : Infinity;
  if (age < ctx.config.monitoring.intervalMs) return recorded;
  try {
    const position = await readRecordedPosition(platformStream(), row.id);
    if (!position) return recorded;
    const settings = (await resolvedStoredConfiguration(
      ctx,
      def,
      row.id,
      (row.spec as ConnectorSpec).configuration,
    )) as unknown as MysqlSourceSettings;
    const measured = await measureBinlogRetention(
      settings,
      { read: position, needed: position },
      {
        engine: def.type === 'MARIADB_SOURCE' ? 'MariaDB' : 'MySQL',
        policy: outboundPolicy(ctx),
        timeoutMs: SLOT_MEASURE_TIMEOUT_MS,
      },
    );
    // No worker reads: nothing is read per second.
    const binlog: BinlogStatus = {
      ...measured,
      eventsPerSecond: 0,
      transactionsPerSecond: 0,
      measuredAt: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
    };
    await ctx.catalog.patchStatus('Connector', row.id, { binlog });
    return binlog;
  } catch (e) {
    ctx.log.warn(
      { connector: row.id, err: e instanceof Error ? e.message : String(e) },
      'could not measure the binary logs of a paused MySQL/MariaDB source',
    );
    return recorded;
  }
}
