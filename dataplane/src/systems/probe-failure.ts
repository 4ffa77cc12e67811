import { brokerRefusal } from './kafka/broker-policy.js';
import { oneLine, OutboundAddressDeniedError } from '@sluice/shared';

// A failed pre-flight is an answer the user reads: one sentence, from the
// most specific error of the chain the clients nest (the Kafka client reports
// a refused login as MultipleErrors → NetworkError → AuthenticationError),
// never a stack trace, a statement or a credential.

/** Thrown by a check that ran and found a problem; its message is for the user. */
export class PreflightFailure extends Error {
  override readonly name = 'PreflightFailure';
}

interface Chained {
  message?: unknown;
  code?: unknown;
  errors?: unknown[];
  cause?: unknown;
}

/** Every error of a chain, outermost first. */
function chain(error: unknown): Chained[] {
  const out: Chained[] = [];
  const walk = (e: unknown, depth: number) => {
    // Not `instanceof Error`: Node's own errors may come from another realm.
    if (depth > 6 || typeof e !== 'object' || e === null || !('message' in e)) return;
    out.push(e as Chained);
    for (const inner of (e as Chained).errors ?? []) walk(inner, depth + 1);
    walk((e as Chained).cause, depth + 1);
  };
  walk(error, 0);
  return out;
}

const NETWORK: Record<string, (where: string) => string> = {
  ECONNREFUSED: (w) => `Connection refused by ${w}: nothing listens there`,
  ENOTFOUND: (w) => `The host of ${w} could not be resolved (DNS)`,
  EAI_AGAIN: (w) => `The host of ${w} could not be resolved (DNS)`,
  ETIMEDOUT: (w) => `Connecting to ${w} timed out`,
  EHOSTUNREACH: (w) => `${w} is unreachable from Sluice`,
  ENETUNREACH: (w) => `${w} is unreachable from Sluice`,
  ECONNRESET: (w) => `${w} closed the connection`,
};

/** What every description says first: the address policy's refusal, or a sentence a check already wrote. */
function settled(error: unknown, errors: Chained[]): string | undefined {
  const denied = errors.find((e) => e instanceof OutboundAddressDeniedError);
  if (denied) return String(denied.message);
  if (error instanceof PreflightFailure) return error.message;
  return undefined;
}

/** The sentence of a socket error code (ECONNREFUSED, ENOTFOUND, …), if it is a known one. */
export function describeNetworkCode(code: string | undefined, where: string): string | undefined {
  return code ? NETWORK[code]?.(where) : undefined;
}

/**
 * One sentence for a failure of a Kafka client call against `where`
 * (the bootstrap list): the address policy, the login, TLS, the network.
 */
export function describeKafkaFailure(error: unknown, where: string): string {
  // A broker the address policy refused, named as the workers name it.
  const refused = brokerRefusal(error);
  if (refused) return `The ${refused}`;
  const errors = chain(error);
  const known = settled(error, errors);
  if (known !== undefined) return known;
  const messages = errors.map((e) => String(e.message ?? ''));
  const auth = messages.find((m) => /authenticat|sasl/i.test(m));
  if (auth) {
    return `The broker at ${where} refused the SASL login: check the user name, password and mechanism`;
  }
  const tls = messages.find((m) => /certificate|self[- ]signed|TLS|SSL|handshake/i.test(m));
  if (tls) return `The TLS connection to ${where} failed: ${oneLine(tls)}`;
  for (const e of errors) {
    const code = typeof e.code === 'string' ? e.code : '';
    const say = NETWORK[code];
    if (say) return say(where);
  }
  const timeout = messages.find((m) => /timed? ?out/i.test(m));
  if (timeout) return `No answer from ${where} within the time limit`;
  const unknownTopic = messages.find((m) => /unknown topic/i.test(m));
  if (unknownTopic) return oneLine(unknownTopic);
  // The deepest message is the most specific one.
  const last = [...messages].reverse().find((m) => m.trim().length > 0);
  return last ? `Kafka at ${where}: ${oneLine(last)}` : `Kafka at ${where} could not be reached`;
}

/** One sentence for a failure of a PostgreSQL connection or query (the server's message and SQLSTATE). */
export function describePgFailure(error: unknown, where: string): string {
  const errors = chain(error);
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
  const code =
    typeof first?.code === 'string' && /^[0-9A-Z]{5}$/.test(first.code) ? `, SQLSTATE ${first.code}` : '';
  return `PostgreSQL at ${where}: ${message}${code}`;
}

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

/**
 * The gateway connects directly (pre-flight checks, previews, backfills): a
 * configuration that reaches its server through an SSH bastion (`ssh_host`)
 * gets this answer instead of a misleading "connection refused" from the
 * address behind the bastion.
 */
export function refuseSshTunnel(
  config: Record<string, unknown>,
  what: string,
  action = 'Pre-flight checks',
  instead = `check ${what} from a host that reaches it`,
): void {
  if (typeof config.ssh_host === 'string' && config.ssh_host !== '') {
    throw new PreflightFailure(
      `${action} through an SSH tunnel are not supported by this version of Sluice: ${instead}`,
    );
  }
}

/** `work`, or a PreflightFailure "No answer from <what> within N s" once `timeoutMs` passed. */
export async function withDeadline<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new PreflightFailure(`No answer from ${what} within ${Math.round(timeoutMs / 1000)} s`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
