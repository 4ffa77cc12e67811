import { oneLine } from '@sluice/shared/util';
import { chain, NETWORK, settled, type Chained } from '../failure.js';

// The one description of a PostgreSQL failure (connection, login, query), for
// a pre-flight answer and a worker's error alike.

/** One sentence for a failure of a PostgreSQL connection or query (the server's message and SQLSTATE). */
export function describePgFailure(error: unknown, where: string): string {
  const errors = chain(error) as (Chained & { column?: unknown })[];
  const known = settled(error, errors);
  if (known !== undefined) return known;
  for (const e of errors) {
    const code = typeof e.code === 'string' ? e.code : '';
    if (code === '28P01' || code === '28000') {
      return `PostgreSQL at ${where} refused the login: check the user name and password (SQLSTATE ${code})`;
    }
    if (code === '3D000') return `${oneLine(String(e.message))} on ${where} (SQLSTATE ${code})`;
    const say = NETWORK[code];
    if (say) return say(where);
  }
  const first = errors[0];
  const message = oneLine(String(first?.message ?? error));
  if (/timeout|timed out/i.test(message))
    return `No answer from PostgreSQL at ${where} within the time limit`;
  const column = typeof first?.column === 'string' ? ` (column "${first.column}")` : '';
  const code =
    typeof first?.code === 'string' && /^[0-9A-Z]{5}$/.test(first.code) ? `, SQLSTATE ${first.code}` : '';
  return `PostgreSQL at ${where}: ${message}${column}${code}`;
}
