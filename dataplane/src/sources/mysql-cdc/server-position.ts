import type mysql from 'mysql2/promise';
import type { MysqlEngine } from '../../systems/mysql/connection.js';
import { MysqlCdcError } from './contract.js';
import { executedGtidPosition } from './gtid-set.js';
import type { BinlogPosition } from './position.js';

// What the server says of its binary log: where it writes now, the GTID
// position at a file and offset (MariaDB), and which files it still holds.
// The snapshot takes its position so (snapshot.ts); a backfill's re-snapshot
// takes the position it is consistent from, and tells whether a recorded one
// can still be resumed (backfill/binlog-resume.ts).

const NO_BINLOG = 'The server has no binary log (log_bin is off): change data capture needs it';

/** The file and offset the server writes next. */
export async function binlogStatus(conn: mysql.Connection): Promise<{ file: string; offset: number }> {
  // MySQL 8.4 renamed SHOW MASTER STATUS; 8.0 and MariaDB know the old name.
  const [rows] = await conn.query('SHOW BINARY LOG STATUS').catch(() => conn.query('SHOW MASTER STATUS'));
  const row = (rows as { File?: string; Position?: number }[])[0];
  if (!row?.File) throw new MysqlCdcError(NO_BINLOG);
  return { file: row.File, offset: Number(row.Position) };
}

/** MariaDB's GTID position at a file and offset ('' when the server logged no GTID yet). */
export async function gtidAt(conn: mysql.Connection, file: string, offset: number): Promise<string> {
  const [rows] = await conn.query('SELECT BINLOG_GTID_POS(?, ?) AS gtid', [file, offset]);
  return String((rows as { gtid: string | null }[])[0]?.gtid ?? '');
}

/**
 * Where the server writes now, with its GTID position: MariaDB's at that
 * file and offset; MySQL's executed set read first, so that a transaction
 * committed between the two reads is streamed again rather than skipped.
 */
export async function currentPosition(conn: mysql.Connection, engine: MysqlEngine): Promise<BinlogPosition> {
  if (engine === 'MariaDB') {
    const { file, offset } = await binlogStatus(conn);
    return { file, offset, gtid: await gtidAt(conn, file, offset) };
  }
  const gtid = await executedGtidPosition(conn);
  return { ...(await binlogStatus(conn)), gtid };
}

/** Whether the server still holds the binary log file of `p` (false: purged, or another server's). */
export async function holdsPosition(conn: mysql.Connection, p: BinlogPosition): Promise<boolean> {
  const [rows] = await conn.query('SHOW BINARY LOGS');
  return (rows as { Log_name: string }[]).some((r) => r.Log_name === p.file);
}

export { NO_BINLOG };
