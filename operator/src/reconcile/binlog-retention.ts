import type { BinlogStatus, ConnectorResource } from '@sluice/shared/catalog';
import type { ConditionValue } from './conditions.js';
import { formatBytes } from './slot-retention.js';

// The purge guard of a MySQL or MariaDB source, the replication slot
// guard's counterpart. A binary log keeps nothing for a reader: the server
// purges its oldest logs by age (binlog_expire_logs_seconds,
// expire_logs_days) or on PURGE BINARY LOGS, never the one it writes. A
// connector whose recorded position is in a purged log cannot resume: the
// changes since are lost, and only a new snapshot helps. So the connector
// and its pipelines are Degraded, whatever their state:
// - when the log the position needs is gone (BinaryLogPurged);
// - before that, while it is not the log the server writes, when it is the
//   oldest log held (the next purge removes it), or when the server purges
//   by age and the capture is behind by BINLOG_PURGE_DEGRADED_SHARE (80 %) of
//   the bytes held: logs held by age span the expiry period, so that share
//   of the logs behind the capture leaves it about a fifth of that period
//   (a day and a half of seven days) before its log goes (BinaryLogRetention).
// docs/data-plane-mysql.md, "Monitoring".

export const BINLOG_PURGE_DEGRADED_SHARE = 0.8;
export const BINLOG_RETENTION_REASON = 'BinaryLogRetention';
export const BINLOG_PURGED_REASON = 'BinaryLogPurged';

function formatSeconds(s: number): string {
  if (s % 86_400 === 0) return `${s / 86_400} d`;
  if (s % 3600 === 0) return `${s / 3600} h`;
  return `${s} s`;
}

/** The Degraded condition the binary logs call for, or undefined when the needed log is safe. */
export function binlogRetentionCondition(
  c: Pick<ConnectorResource, 'metadata'> & { status?: { binlog?: BinlogStatus } | undefined },
): ConditionValue | undefined {
  const b = c.status?.binlog;
  if (!b) return undefined;
  const measured = `measured ${b.measuredAt}`;
  const keepLonger =
    'keep binary logs longer than the connector may be stopped (binlog_expire_logs_seconds' +
    (b.expireSeconds > 0 ? `, now ${formatSeconds(b.expireSeconds)})` : ')');
  if (b.logsBeforeNeeded < 0) {
    return {
      status: 'True',
      reason: BINLOG_PURGED_REASON,
      message:
        `The server no longer holds the binary log ${b.neededFile} this connector resumes from (oldest held: ` +
        `${b.oldestFile}, ${measured}): the changes since cannot be captured. Take a new snapshot, by a ` +
        'snapshot backfill of all its data models into all their targets (POST /backfills/; the worker then ' +
        `resumes where the backfill began), or by deleting the topic sluice-position.${c.metadata.name} of the ` +
        `platform broker (the next start snapshots every table again), and ${keepLonger}`,
    };
  }
  if (b.neededFile === b.currentFile) return undefined;
  const share = b.heldBytes > 0 ? b.lagBytes / b.heldBytes : 0;
  const oldest = b.logsBeforeNeeded === 0;
  if (!oldest && !(b.expireSeconds > 0 && share >= BINLOG_PURGE_DEGRADED_SHARE)) return undefined;
  const where = oldest
    ? `the oldest the server holds: the next purge removes it`
    : `${Math.round(share * 100)} % of the ${formatBytes(b.heldBytes)} of binary logs the server holds are behind ` +
      `it, and the server purges logs older than ${formatSeconds(b.expireSeconds)}`;
  return {
    status: 'True',
    reason: BINLOG_RETENTION_REASON,
    message:
      `This connector resumes from the binary log ${b.neededFile}, ${where} (${formatBytes(b.lagBytes)} behind ` +
      `the server's position in ${b.currentFile}, ${measured}). Once it is purged the connector cannot resume ` +
      `without a new snapshot: start the pipeline so the connector catches up, or ${keepLonger}`,
  };
}
