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
