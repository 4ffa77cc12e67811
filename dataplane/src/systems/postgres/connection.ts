import { Socket, isIP } from 'node:net';
import type { ConnectionOptions } from 'node:tls';
import pg from 'pg';
import type { OutboundPolicy } from '@sluice/shared/net';
import {
  acquireTunnel,
  sshTunnelOf,
  viaBastion,
  type SshTunnel,
  type SshTunnelSettings,
  type TunnelOptions,
} from '../ssh/connection.js';

// Connection settings of a PostgreSQL source or target, as the worker has them
// once the framework resolved the secret references (a plain password), turned
// into a node-postgres configuration. Shared by the Postgres sink and the CDC
// source so both connect the same way: under the outbound-address policy
// (SSRF), in UTC with ISO dates (values read from the snapshot and decoded from
// the replication stream then look the same), with the libpq ssl modes, and
// through the configured SSH bastion when `ssh_host` is set (../ssh/).

export type PostgresSslMode = 'disable' | 'allow' | 'prefer' | 'require' | 'verify-ca' | 'verify-full';

export interface PostgresSettings extends Partial<SshTunnelSettings> {
  /** With `ssh_host`: the server's host as the bastion sees it. */
  host: string;
  port?: number;
  database: string;
  user: string;
  /** Already resolved: never a secret reference here. */
  password: string;
  ssl_mode?: PostgresSslMode;
  /** PEM CA certificate for verify-ca / verify-full. */
  ssl_root_cert?: string;
}

/** Session settings every Sluice connection runs with (see the file comment). */
const SESSION_OPTIONS = '-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=iso_8601';

/** How a server is named in messages: `host:port`, and the bastion it is reached through. */
export const pgWhere = (settings: Pick<PostgresSettings, 'host' | 'port' | 'ssh_host' | 'ssh_port'>) =>
  `${settings.host}:${settings.port ?? 5432}${viaBastion(settings)}`;

/**
 * The node-postgres configuration of `settings`. With a `policy`, the TCP
 * connection is opened through the policy's `lookup`, so the address checked
 * is the address connected to; an IP literal is checked before connecting.
 * `tls` overrides the TLS decision (the `prefer` fallback uses it). A
 * tunnelled server is reached through `tunnel` (connectClient opens it):
 * the policy then applied to the bastion, and TLS still verifies the
 * server's own name.
 */
export function pgConfig(
  settings: PostgresSettings,
  options: { policy?: OutboundPolicy; applicationName?: string; tls?: boolean; tunnel?: SshTunnel } = {},
): pg.ClientConfig {
  const { policy, tunnel } = options;
  // Never a direct connection to a server configured behind a bastion.
  if (sshTunnelOf(settings) && !tunnel) throw new Error('A tunnelled PostgreSQL server needs its SSH tunnel');
  if (policy && !tunnel) policy.assertHost(settings.host);
  const mode = settings.ssl_mode ?? 'prefer';
  const useTls = options.tls ?? !['disable', 'allow'].includes(mode);
  const tls = tlsOptions(mode, settings.ssl_root_cert);
  const config: pg.ClientConfig = {
    host: tunnel ? '127.0.0.1' : settings.host,
    port: tunnel ? tunnel.port : (settings.port ?? 5432),
    database: settings.database,
    user: settings.user,
    password: settings.password,
    application_name: options.applicationName ?? 'sluice',
    options: SESSION_OPTIONS,
    ssl: useTls ? (tunnel ? { ...tls, ...serverName(settings.host) } : tls) : false,
    connectionTimeoutMillis: 15_000,
    keepAlive: true,
  };
  if (tunnel) {
    config.stream = () => tunnel.socket();
  } else if (policy) {
    // node-postgres calls `stream.connect(port, host)`: route it through the
    // policy's lookup (node:net skips lookup for IP literals, checked above).
    config.stream = () => {
      const socket = new Socket();
      const connect = socket.connect.bind(socket) as (opts: object) => Socket;
      (socket as unknown as { connect: (port: number, host: string) => Socket }).connect = (port, host) =>
        connect(isIP(host) ? { port, host } : { port, host, lookup: policy.lookup });
      return socket;
    };
  }
  return config;
}

/** The name TLS verifies through a tunnel: the server's, not 127.0.0.1 (SNI only for a name). */
const serverName = (host: string): ConnectionOptions => (isIP(host) ? { host } : { host, servername: host });

function tlsOptions(mode: PostgresSslMode, ca: string | undefined): ConnectionOptions {
  switch (mode) {
    case 'verify-full':
      return { rejectUnauthorized: true, ...(ca ? { ca } : {}) };
    case 'verify-ca':
      // The chain is verified, the host name is not (libpq's verify-ca).
      return { rejectUnauthorized: true, ...(ca ? { ca } : {}), checkServerIdentity: () => undefined };
    default:
      // require / prefer: encrypted, the certificate not verified (libpq's meaning).
      return { rejectUnauthorized: false };
  }
}

/**
 * Connects a client built by `make(tls, tunnel)`; with ssl_mode `prefer` a
 * server that refuses TLS is retried in clear text, as libpq does. With
 * `ssh_host` the client goes through the process's tunnel to the server,
 * held while the client lives; a tunnel failure is thrown in its own
 * sentence (a SystemFailure).
 */
export async function connectClient(
  settings: PostgresSettings,
  make: (tls: boolean | undefined, tunnel: SshTunnel | undefined) => pg.Client,
  options: TunnelOptions = {},
): Promise<pg.Client> {
  const ssh = sshTunnelOf(settings);
  const lease = ssh
    ? await acquireTunnel(ssh, { host: settings.host, port: settings.port ?? 5432 }, options)
    : undefined;
  const tunnel = lease?.tunnel;
  const connected = async (client: pg.Client) => {
    await client.connect();
    if (lease) client.once('end', lease.release);
    return client;
  };
  const client = make(undefined, tunnel);
  try {
    return await connected(client);
  } catch (error) {
    await client.end().catch(() => undefined);
    const refused = error instanceof Error && /does not support SSL/i.test(error.message);
    if ((settings.ssl_mode ?? 'prefer') !== 'prefer' || !refused) {
      lease?.release();
      throw error;
    }
    return connected(make(false, tunnel)).catch((e: unknown) => {
      lease?.release();
      throw e;
    });
  }
}

/**
 * A connected session for a few short queries (pre-flight checks, slot
 * measurements, backfill reads): `connectTimeoutMs` to connect and, when
 * given, `queryTimeoutMs` per statement (server and client side). A
 * connection error after the answer must not crash the process: ignored,
 * the next query fails.
 */
export function openSession(
  settings: PostgresSettings,
  o: { policy?: OutboundPolicy; applicationName: string; connectTimeoutMs: number; queryTimeoutMs?: number },
): Promise<pg.Client> {
  return connectClient(
    settings,
    (tls, tunnel) => {
      const c = new pg.Client({
        ...pgConfig(settings, {
          ...(o.policy ? { policy: o.policy } : {}),
          applicationName: o.applicationName,
          ...(tls === undefined ? {} : { tls }),
          ...(tunnel ? { tunnel } : {}),
        }),
        connectionTimeoutMillis: o.connectTimeoutMs,
        ...(o.queryTimeoutMs === undefined
          ? {}
          : { statement_timeout: o.queryTimeoutMs, query_timeout: o.queryTimeoutMs }),
      });
      c.on('error', () => undefined);
      return c;
    },
    { ...(o.policy ? { policy: o.policy } : {}), handshakeTimeoutMs: o.connectTimeoutMs },
  );
}

/** A double-quoted identifier: a table or column name is user data, never SQL. */
export function quoteIdent(name: string): string {
  if (name.includes('\0')) throw new Error('An identifier cannot contain a NUL character');
  return `"${name.replace(/"/g, '""')}"`;
}

/** A single-quoted literal, for the few commands that take no parameters (replication). */
export function quoteLiteral(value: string): string {
  if (value.includes('\0')) throw new Error('A literal cannot contain a NUL character');
  return `'${value.replace(/'/g, "''")}'`;
}
