import { isIP } from 'node:net';
import { createRequire } from 'node:module';
import { OutboundAddressDeniedError, type OutboundPolicy } from '@sluice/shared/net';
import { oneLine } from '@sluice/shared/util';
import { OracleSqlError, SESSION_SETUP_SQL, type OracleBindDef } from '../../sinks/oracle-sql.js';
import { SystemFailure } from '../failure.js';
import { acquireTunnel, sshTunnelOf, viaBastion, type SshTunnelSettings } from '../ssh/connection.js';

// Connections of the ORACLE_TARGET sink and of its pre-flight check, through
// node-oracledb in thin mode (pure JavaScript: `initOracleClient` is never
// called, no Instant Client is needed). The driver is reached only through
// `OracleSession`, the few calls the sink makes, so the sink's batch and
// transaction logic is unit-tested with a recording session.
//
// The driver opens its socket itself (no `lookup` hook), so the host is
// resolved here under the outbound policy and the driver is given the
// address that was checked: a DNS answer that changes in between cannot
// slip through. The configuration has no TLS fields: plain TCP. With
// `ssh_host`, the driver dials the local end of an SSH tunnel instead
// (../ssh/), held while the session lives; the policy then applies to the
// bastion. A listener that redirects clients to another address (shared
// servers, RAC's SCAN listeners) cannot be followed through it.

export interface OracleSettings extends Partial<SshTunnelSettings> {
  /** With `ssh_host`: the listener's host as the bastion sees it. */
  host: string;
  /** A string in ORACLE_TARGET's configuration (spec 2.13). */
  port: string | number;
  /** Service name. */
  database: string;
  user: string;
  /** Already resolved: never a secret reference here. */
  password: string;
}

/** What the sink and the pre-flight check use of a connection. */
export interface OracleSession {
  readonly serverVersion: string;
  /** One statement in the open transaction; the rows of a query, as arrays. */
  execute(sql: string, binds?: readonly (string | null)[]): Promise<unknown[][]>;
  /** One statement run for each row of binds, in the open transaction. */
  executeMany(sql: string, rows: (string | null)[][], bindDefs: readonly OracleBindDef[]): Promise<void>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  close(): Promise<void>;
}

export interface OracleConnectOptions {
  policy?: OutboundPolicy;
  /** Deadline of the TCP connection and of the handshake each; whole seconds for the driver. */
  connectTimeoutMs?: number;
  /** Deadline of each round trip once connected; none by default. */
  callTimeoutMs?: number;
}

/** Settings refused before any connection (a malformed service name or port). */
export class OracleSettingsError extends Error {
  override readonly name = 'OracleSettingsError';
}

const SERVICE_NAME = /^[A-Za-z0-9_$#.-]{1,128}$/;

/** `host:port` for messages, and the bastion it is reached through. */
export const oracleWhere = (s: Pick<OracleSettings, 'host' | 'port' | 'ssh_host' | 'ssh_port'>): string =>
  `${s.host}:${s.port}${viaBastion(s)}`;

function portOf(settings: OracleSettings): number {
  const port = Number(settings.port);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new OracleSettingsError(`The port "${settings.port}" is not a TCP port (1-65535)`);
  }
  return port;
}

/** The address to dial: an IP literal checked, or the name resolved through the policy's lookup. */
async function allowedAddress(host: string, policy: OutboundPolicy | undefined): Promise<string> {
  const bare = host.replace(/^\[(.*)\]$/, '$1');
  if (isIP(bare) !== 0) {
    policy?.assertHost(bare);
    return bare;
  }
  if (!policy) return bare;
  return new Promise((resolve, reject) => {
    policy.lookup(bare, {}, (error, address) => (error ? reject(error) : resolve(String(address))));
  });
}

interface Driver {
  getConnection(options: Record<string, unknown>): Promise<DriverConnection>;
  DB_TYPE_VARCHAR: unknown;
  DB_TYPE_CLOB: unknown;
  OUT_FORMAT_ARRAY: unknown;
}

interface DriverConnection {
  oracleServerVersionString: string;
  callTimeout: number;
  execute(sql: string, binds: unknown[], options: object): Promise<{ rows?: unknown[][] }>;
  executeMany(sql: string, binds: unknown[][], options: object): Promise<unknown>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  close(): Promise<void>;
}

// node-oracledb is CommonJS without type declarations: loaded once, typed by `Driver`.
let driver: Driver | undefined;
const loadDriver = (): Driver => (driver ??= createRequire(import.meta.url)('oracledb') as Driver);

/** Opens a thin-mode connection with the session settings of SESSION_SETUP_SQL. */
export async function openOracleSession(
  settings: OracleSettings,
  options: OracleConnectOptions = {},
): Promise<OracleSession> {
  const port = portOf(settings);
  if (!SERVICE_NAME.test(settings.database)) {
    throw new OracleSettingsError(
      'The database (service name) may hold only letters, digits and _ $ # . - (at most 128)',
    );
  }
  const ssh = sshTunnelOf(settings);
  const lease = ssh
    ? await acquireTunnel(
        ssh,
        { host: settings.host.replace(/^\[(.*)\]$/, '$1'), port },
        {
          ...(options.policy ? { policy: options.policy } : {}),
          handshakeTimeoutMs: options.connectTimeoutMs ?? 15_000,
        },
      )
    : undefined;
  let conn: DriverConnection;
  const oracledb = loadDriver();
  const mark = lease?.tunnel.mark() ?? 0;
  try {
    const address = lease ? '127.0.0.1' : await allowedAddress(settings.host, options.policy);
    const hostPart = isIP(address) === 6 ? `[${address}]` : address;
    const seconds = Math.max(1, Math.ceil((options.connectTimeoutMs ?? 15_000) / 1000));
    conn = await oracledb.getConnection({
      user: settings.user,
      password: settings.password,
      connectString: `${hostPart}:${lease ? lease.tunnel.port : port}/${settings.database}`,
      connectTimeout: seconds,
      transportConnectTimeout: seconds,
    });
  } catch (error) {
    lease?.release();
    // The driver dials the tunnel's listener itself: the tunnel's own failure says more than its.
    throw lease?.tunnel.failureSince(mark) ?? error;
  }
  if (options.callTimeoutMs) conn.callTimeout = options.callTimeoutMs;
  try {
    await conn.execute(SESSION_SETUP_SQL, [], {});
  } catch (error) {
    await conn.close().catch(() => undefined);
    lease?.release();
    throw error;
  }
  return {
    serverVersion: conn.oracleServerVersionString,
    async execute(sql, binds = []) {
      const r = await conn.execute(sql, [...binds], { outFormat: oracledb.OUT_FORMAT_ARRAY });
      return r.rows ?? [];
    },
    async executeMany(sql, rows, bindDefs) {
      await conn.executeMany(sql, rows, {
        autoCommit: false,
        bindDefs: bindDefs.map((d) =>
          d.type === 'clob'
            ? { type: oracledb.DB_TYPE_CLOB }
            : { type: oracledb.DB_TYPE_VARCHAR, maxSize: d.maxSize ?? 1 },
        ),
      });
    },
    commit: () => conn.commit(),
    rollback: () => conn.rollback(),
    close: () => conn.close().finally(() => lease?.release()),
  };
}

/** The driver's code of an error: ORA-01017, NJS-503, … */
export function oracleCode(error: unknown): string | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^(ORA|NJS|DPY|TNS)-\d{3,5}$/.test(code) ? code : undefined;
}

/** What the server's errors mean to a user, by code (the rest: the server's first line). */
const ORA_TEXT: Readonly<Record<string, string>> = {
  'ORA-00001': 'a unique constraint was violated (one other than the primary key?)',
  'ORA-00054': 'the table is locked by another session',
  'ORA-00904': 'a column of the rows does not exist in the table',
  'ORA-00942': 'the table does not exist, or the user may not see it',
  'ORA-00955': 'the name is already used by another object',
  'ORA-01031': 'the user lacks a privilege this needs (CREATE TABLE, or INSERT, UPDATE, DELETE on the table)',
  'ORA-01400': 'a NOT NULL column got no value',
  'ORA-01438': 'a number is larger than its column’s precision',
  'ORA-01450': 'the primary key is too long for an index',
  'ORA-01653': 'the tablespace is full',
  'ORA-01722': 'a value is not a number, for a numeric column',
  'ORA-01830': 'a value is not a valid date for its column',
  'ORA-01843': 'a value is not a valid date for its column',
  'ORA-01847': 'a value is not a valid date for its column',
  'ORA-01861': 'a value is not a valid date for its column',
  'ORA-01950': 'the user has no quota on the tablespace',
  'ORA-02291': 'a foreign key’s parent row does not exist',
  'ORA-02292': 'a deleted row is referenced by a foreign key',
  'ORA-12899': 'a value is too long for its column',
  'ORA-28000': 'the account is locked',
  'ORA-28001': 'the password has expired',
  'ORA-30926': 'the rows of one MERGE repeat a key',
};

const firstLine = (text: string) => oneLine(text.replace(/\s*\(CONNECTION_ID=[^)]*\)/g, ''));

/** A Node socket error code anywhere in the error's text or chain (ECONNREFUSED, ENOTFOUND, …). */
function socketCode(error: unknown): string | undefined {
  const e = error as { code?: unknown; message?: unknown; cause?: unknown };
  if (typeof e?.code === 'string' && /^E[A-Z]+$/.test(e.code)) return e.code;
  const inText =
    typeof e?.message === 'string'
      ? /\b(E(?:CONNREFUSED|NOTFOUND|AI_AGAIN|TIMEDOUT|HOSTUNREACH|NETUNREACH|CONNRESET))\b/.exec(e.message)
      : null;
  return inText?.[1] ?? (e?.cause ? socketCode(e.cause) : undefined);
}

const SOCKET_TEXT: Readonly<Record<string, string>> = {
  ECONNREFUSED: 'connection refused (nothing listens there)',
  ENOTFOUND: 'the host name could not be resolved (DNS)',
  EAI_AGAIN: 'the host name could not be resolved (DNS)',
  ETIMEDOUT: 'the connection timed out',
  EHOSTUNREACH: 'the host is unreachable',
  ENETUNREACH: 'the network is unreachable',
  ECONNRESET: 'the connection was reset',
};

/**
 * One sentence for an error of a connection to `where` or of a statement:
 * the address policy, the network, the Oracle handshake, the login, then
 * known ORA codes in words. Never a statement, a bind value, a password or a
 * stack trace; the code is kept for searching the documentation. `phase`
 * says whether a session was open: a peer that closes while the driver
 * connects is no Oracle listener, however the driver saw the close (an
 * end-of-file while it read, or EPIPE/ECONNRESET while it wrote its connect
 * packet — which of the two depends on timing alone).
 */
export function describeOracleError(
  error: unknown,
  where: string,
  phase: 'connect' | 'session' = 'session',
): string {
  if (
    error instanceof OutboundAddressDeniedError ||
    error instanceof SystemFailure ||
    error instanceof OracleSettingsError ||
    error instanceof OracleSqlError
  ) {
    return error.message;
  }
  const code = oracleCode(error);
  const message = error instanceof Error ? error.message : String(error);
  const net = socketCode(error);
  switch (code) {
    case 'NJS-503':
    case 'NJS-530':
    case undefined:
      if (net) return `Could not connect to Oracle at ${where}: ${SOCKET_TEXT[net] ?? net}`;
      if (code) return `Could not connect to Oracle at ${where} (${code})`;
      return `Oracle at ${where}: ${firstLine(message)}`;
    case 'NJS-511':
    case 'ORA-12541':
      return `Could not connect to Oracle at ${where}: the listener refused the connection (${code})`;
    case 'NJS-510': {
      const seconds = /of (\d+) seconds/.exec(message)?.[1];
      return `Could not connect to Oracle at ${where}: no answer from an Oracle listener${seconds ? ` within ${seconds} s` : ''} (${code})`;
    }
    case 'NJS-500':
    case 'NJS-501':
    case 'NJS-521':
      return phase === 'connect' || /NJS-521|end-of-file/.test(message)
        ? `${where} closed the connection during the Oracle handshake: is an Oracle listener there? (${code})`
        : `The connection to Oracle at ${where} was closed or broken (${code})`;
    case 'NJS-518':
    case 'ORA-12514':
      return `The Oracle listener at ${where} does not know the service name given as "database" (${code})`;
    case 'NJS-519':
    case 'ORA-12505':
      return `The Oracle listener at ${where} does not know the SID given as "database" (${code})`;
    case 'ORA-01017':
      return `Oracle at ${where} refused the login: check the user name and password (${code})`;
    case 'ORA-12660':
      return `Oracle at ${where} requires native network encryption, which the thin client does not speak (${code})`;
    default:
      if (ORA_TEXT[code]) return `${ORA_TEXT[code]} (${code})`;
      // The driver's network-layer errors (NJS-5xx), and NJS-068 which it
      // raises on a malformed error packet, mean the peer does not speak Oracle Net.
      if (code === 'NJS-068' || /^NJS-5\d\d$/.test(code)) {
        return `${where} did not answer with the Oracle network protocol (${code})`;
      }
      return firstLine(message).startsWith(code) ? firstLine(message) : `${firstLine(message)} (${code})`;
  }
}
