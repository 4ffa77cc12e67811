import type mysql from 'mysql2/promise';
import { type OutboundPolicy } from '@sluice/shared/net';
import { mysqlWhere, openMysql, type MysqlEngine } from '../systems/mysql/connection.js';
import { describeMysqlFailure } from '../systems/mysql/errors.js';
import { MysqlCdcError, type MysqlSourceSettings } from './mysql-cdc/contract.js';
import type { BinlogPosition } from './mysql-cdc/position.js';

// What the binary logs of a MySQL or MariaDB source say about its connector:
// how far behind the server's current position the capture reads (bytes),
// and whether the log its recorded position needs is about to be purged. A
// binary log has no replication slot: the server purges logs by age
// (binlog_expire_logs_seconds, expire_logs_days) or on PURGE BINARY LOGS,
// whoever still needs them, oldest first and never the current one. Read
// from SHOW BINARY LOGS (each held log and its size; the last one is the
// current, its size the current position) on a short-lived connection of
// its own: the capture's connections are busy with the dump and its
// catalog reads (docs/data-plane-mysql.md, "Monitoring").

export interface HeldLog {
  name: string;
  size: number;
}

export interface BinlogRetention {
  /** Bytes of binary log between the read position and the server's current position. */
  lagBytes: number;
  /** Bytes of every binary log the server holds. */
  heldBytes: number;
  /** The log the recorded position needs (a restart resumes there). */
  neededFile: string;
  oldestFile: string;
  currentFile: string;
  /** Logs the server holds older than the needed one (purged before it); -1 when it holds the needed one no more. */
  logsBeforeNeeded: number;
  /** Age after which the server purges a log, 0 when it never does by itself. */
  expireSeconds: number;
}

/** The number a binary log's name ends with (`binlog.000042` → 42): names sort by it, past 999999 too. */
const logNumber = (name: string) => Number(/\.(\d+)$/.exec(name)?.[1] ?? NaN);
const compareLogs = (a: string, b: string) => {
  const d = logNumber(a) - logNumber(b);
  return Number.isNaN(d) ? a.localeCompare(b) : d;
};

/** The figures of `held` (as SHOW BINARY LOGS lists them) for a capture reading at `read`, resuming at `needed`. */
export function binlogRetentionOf(
  held: readonly HeldLog[],
  read: BinlogPosition,
  needed: BinlogPosition,
  expireSeconds: number,
): BinlogRetention {
  const logs = [...held].sort((a, b) => compareLogs(a.name, b.name));
  if (logs.length === 0)
    throw new MysqlCdcError('The server lists no binary log (SHOW BINARY LOGS is empty)');
  let lagBytes = 0;
  for (const log of logs) {
    const order = compareLogs(log.name, read.file);
    if (order > 0) lagBytes += log.size;
    else if (order === 0) lagBytes += Math.max(0, log.size - read.offset);
  }
  return {
    lagBytes,
    heldBytes: logs.reduce((n, l) => n + l.size, 0),
    neededFile: needed.file,
    oldestFile: logs[0]!.name,
    currentFile: logs.at(-1)!.name,
    logsBeforeNeeded: logs.findIndex((l) => l.name === needed.file),
    expireSeconds,
  };
}

/** The server's held logs and its expiry, on `conn`. */
export async function readHeldLogs(
  conn: mysql.Connection,
): Promise<{ held: HeldLog[]; expireSeconds: number }> {
  const [rows] = await conn.query('SHOW BINARY LOGS');
  const held = (rows as { Log_name: string; File_size: number | string }[]).map((r) => ({
    name: r.Log_name,
    size: Number(r.File_size),
  }));
  // MySQL 8 and MariaDB 10.6+ have binlog_expire_logs_seconds; older servers expire_logs_days only
  // (MySQL 8.4 dropped it): either may be missing, and a server may set either.
  const variable = async (name: string) => {
    try {
      const [v] = await conn.query(`SELECT @@global.${name} AS v`);
      return Number((v as { v: unknown }[])[0]?.v ?? 0) || 0;
    } catch {
      return 0;
    }
  };
  const seconds = await variable('binlog_expire_logs_seconds');
  const days = seconds > 0 ? 0 : await variable('expire_logs_days');
  return { held, expireSeconds: seconds > 0 ? seconds : Math.round(days * 86_400) };
}

/** Measures once, on a connection opened for it. */
export async function measureBinlogRetention(
  settings: MysqlSourceSettings,
  positions: { read: BinlogPosition; needed: BinlogPosition },
  options: { engine: MysqlEngine; policy: OutboundPolicy; timeoutMs?: number },
): Promise<BinlogRetention> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  let session: Awaited<ReturnType<typeof openMysql>> | undefined;
  try {
    session = await openMysql(settings, { policy: options.policy, timeoutMs });
    const { held, expireSeconds } = await readHeldLogs(session.conn);
    return binlogRetentionOf(held, positions.read, positions.needed, expireSeconds);
  } catch (error) {
    if (error instanceof MysqlCdcError) throw error;
    throw new MysqlCdcError(
      `Reading the binary logs of ${options.engine} at ${mysqlWhere(settings)} failed: ${describeMysqlFailure(error, options.engine, mysqlWhere(settings))}`,
    );
  } finally {
    await session?.close().catch(() => undefined);
  }
}
