import { oneLine } from '@sluice/shared/util';
import { chain, NETWORK, settled } from '../failure.js';

// The one description of a MySQL or MariaDB failure (connection, login, query).

/** One sentence for a failure of a MySQL or MariaDB connection or query (the server's message and error code). */
export function describeMysqlFailure(error: unknown, engine: string, where: string): string {
  const errors = chain(error);
  const known = settled(error, errors);
  if (known !== undefined) return known;
  for (const e of errors) {
    const code = typeof e.code === 'string' ? e.code : '';
    if (code === 'ER_ACCESS_DENIED_ERROR' || code === 'ER_DBACCESS_DENIED_ERROR') {
      return `${engine} at ${where} refused the login: check the user name and password (${code})`;
    }
    if (code === 'ER_BAD_DB_ERROR') return `${engine} at ${where}: ${oneLine(String(e.message))} (${code})`;
    if (code === 'HANDSHAKE_NO_SSL_SUPPORT') {
      return `${engine} at ${where} offers no TLS, which the SSL mode requires`;
    }
    if (code === 'ETIMEDOUT') return `Connecting to ${where} timed out`;
    const say = NETWORK[code];
    if (say) return say(where);
  }
  const first = errors[0];
  const message = oneLine(String(first?.message ?? error));
  if (/certificate|self[- ]signed|TLS|SSL/i.test(message)) {
    return `The TLS connection to ${engine} at ${where} failed: ${message}`;
  }
  const code = typeof first?.code === 'string' && /^ER_[A-Z_]+$/.test(first.code) ? ` (${first.code})` : '';
  return `${engine} at ${where}: ${message}${code}`;
}

/** The server's settings that change data capture depends on (`@@global.*`). */
export interface BinlogSettings {
  log_bin: number | string | null;
  binlog_format: string | null;
  binlog_row_image: string | null;
}

/**
 * What the server's binary log lacks for change data capture, one sentence
 * each: the pre-flight check warns with them, the capture stops with them.
 */
export function binlogShortfalls(s: BinlogSettings): string[] {
  const out: string[] = [];
  if (String(s.log_bin) !== '1' && String(s.log_bin).toUpperCase() !== 'ON') {
    out.push('The binary log is off (log_bin): change data capture needs it');
  }
  if (s.binlog_format && s.binlog_format.toUpperCase() !== 'ROW') {
    out.push(`binlog_format is "${s.binlog_format}": change data capture needs ROW`);
  }
  if (s.binlog_row_image && s.binlog_row_image.toUpperCase() !== 'FULL') {
    out.push(`binlog_row_image is "${s.binlog_row_image}": change data capture needs FULL`);
  }
  return out;
}

/** The sentence of missing replication privileges. */
export const REPLICATION_GRANTS_MISSING =
  'The user lacks REPLICATION SLAVE and REPLICATION CLIENT, which change data capture needs';
