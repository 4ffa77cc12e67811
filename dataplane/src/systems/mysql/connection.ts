import { connect as netConnect, isIP } from 'node:net';
import mysql, { type SslOptions as TlsOptions } from 'mysql2/promise';
import type { OutboundPolicy } from '@sluice/shared/net';
import { acquireTunnel, sshTunnelOf, viaBastion, type TunnelLease } from '../ssh/connection.js';

// A connection to a MySQL or MariaDB server as a connector's settings say
// (host, port, user, password, database, ssl_mode, ssl_ca, ssh_*): the socket
// opened under the outbound-address policy, or through the SSH tunnel of
// `ssh_host` (the policy then applied to the bastion). Used by the pre-flight
// checks (probes.ts) and the change capture (sources/mysql-cdc/).

export type MysqlEngine = 'MySQL' | 'MariaDB';
export type MysqlConfig = Record<string, unknown>;

export interface MysqlConnectOptions {
  policy: OutboundPolicy;
  /** Deadline of the connection (TCP, TLS, login), ms. */
  timeoutMs: number;
}

/** An open connection and what closes it (the connection, then its tunnel lease). */
export interface MysqlSession {
  conn: mysql.Connection;
  /** Ends the connection politely (COM_QUIT after the running command), then releases the tunnel. */
  close(): Promise<void>;
  /** Drops the socket at once: for a connection whose command never ends (a binary log dump). */
  destroy(): void;
}

/** The server as messages name it: `host:port`, and the bastion when tunnelled. */
export function mysqlWhere(config: MysqlConfig): string {
  const port = typeof config.port === 'number' ? config.port : 3306;
  return `${String(config.host ?? '')}:${port}${viaBastion(config)}`;
}

function tlsFor(config: MysqlConfig): TlsOptions | undefined {
  const mode = typeof config.ssl_mode === 'string' ? config.ssl_mode : 'preferred';
  const ca = typeof config.ssl_ca === 'string' ? config.ssl_ca : undefined;
  switch (mode) {
    case 'disabled':
      return undefined;
    case 'verify_ca':
      // The chain is verified, the host name is not (the client's VERIFY_CA).
      return { ...(ca ? { ca } : {}), rejectUnauthorized: true, verifyIdentity: false };
    case 'verify_identity':
      return { ...(ca ? { ca } : {}), rejectUnauthorized: true, verifyIdentity: true };
    default:
      // preferred and required: encrypted, the certificate not verified.
      return { rejectUnauthorized: false };
  }
}

/**
 * Opens one connection. `preferred` falls back to a plain connection only
 * when the server offers no TLS at all. Failures are the driver's errors
 * (describeMysqlFailure says them); the tunnel is released on failure.
 */
export async function openMysql(
  config: MysqlConfig,
  opts: MysqlConnectOptions,
  extra: Partial<mysql.ConnectionOptions> = {},
): Promise<MysqlSession> {
  const host = String(config.host ?? '');
  const port = typeof config.port === 'number' ? config.port : 3306;
  const ssh = sshTunnelOf(config);
  let lease: TunnelLease | undefined;
  const open = async (ssl: TlsOptions | undefined) => {
    const tunnel = lease?.tunnel;
    if (!tunnel) opts.policy.assertHost(host);
    return mysql.createConnection({
      host,
      port,
      user: String(config.user ?? ''),
      password: typeof config.password === 'string' ? config.password : '',
      ...(typeof config.database === 'string' ? { database: config.database } : {}),
      ...(ssl ? { ssl } : {}),
      connectTimeout: opts.timeoutMs,
      // The socket goes through the policy's lookup, so the address checked
      // is the address connected to (no DNS rebinding in between).
      // Through a tunnel the driver still names the server by its host (TLS verifies it).
      stream: tunnel
        ? () => tunnel.connect()
        : () => netConnect(isIP(host) ? { port, host } : { port, host, lookup: opts.policy.lookup }),
      timezone: 'Z',
      supportBigNumbers: true,
      bigNumberStrings: true,
      ...extra,
    });
  };
  try {
    if (ssh) {
      lease = await acquireTunnel(
        ssh,
        { host, port },
        { policy: opts.policy, handshakeTimeoutMs: opts.timeoutMs },
      );
    }
    const ssl = tlsFor(config);
    let conn: mysql.Connection;
    try {
      conn = await open(ssl);
    } catch (e) {
      const preferred = (config.ssl_mode ?? 'preferred') === 'preferred';
      if (!preferred || (e as { code?: string }).code !== 'HANDSHAKE_NO_SSL_SUPPORT') throw e;
      conn = await open(undefined);
    }
    let closed = false;
    return {
      conn,
      close: async () => {
        if (closed) return;
        closed = true;
        await conn.end().catch(() => conn.destroy());
        lease?.release();
      },
      destroy: () => {
        if (closed) return;
        closed = true;
        conn.destroy();
        lease?.release();
      },
    };
  } catch (e) {
    lease?.release();
    throw e;
  }
}
