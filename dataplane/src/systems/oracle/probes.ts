import type { OutboundPolicy } from '@sluice/shared/net';
import {
  describeOracleError,
  openOracleSession,
  oracleWhere,
  type OracleSession,
  type OracleSettings,
} from './connection.js';
import { SystemFailure, withDeadline } from '../failure.js';
import { sshTunnelOf } from '../ssh/connection.js';

// check-credentials of an ORACLE_TARGET (spec 4.5): the worker's connection
// (dataplane/src/systems/oracle/connection.ts: node-oracledb in thin mode, the
// host resolved and checked under the policy, the checked address dialled),
// a short connect deadline, then one read of the session's privileges —
// nothing is created or written.

export interface OracleCheckOptions {
  policy: OutboundPolicy;
  timeoutMs: number;
}

/** Connecting (TCP, then the Oracle handshake) gets at most this much of the check's deadline. */
const CONNECT_TIMEOUT_MS = 5_000;

function settingsOf(config: Record<string, unknown>): OracleSettings {
  const str = (k: string) => (typeof config[k] === 'string' ? (config[k] as string) : '');
  return {
    host: str('host'),
    port: str('port'),
    database: str('database'),
    user: str('user'),
    password: str('password'),
    ...sshTunnelOf(config),
  };
}

/** check-credentials: log in and read whether the user may create the tables the sink creates. */
export async function checkOracle(
  config: Record<string, unknown>,
  opts: OracleCheckOptions,
): Promise<{ server_version: string; warnings: string[] }> {
  const settings = settingsOf(config);
  const where = oracleWhere(settings);
  let session: OracleSession | undefined;
  let abandoned = false;
  try {
    // A late connection is closed when it arrives (`abandoned`).
    return await withDeadline(
      (async () => {
        const opened = await openOracleSession(settings, {
          policy: opts.policy,
          connectTimeoutMs: Math.min(CONNECT_TIMEOUT_MS, opts.timeoutMs),
          callTimeoutMs: opts.timeoutMs,
        });
        if (abandoned) {
          await opened.close().catch(() => undefined);
          throw new SystemFailure(`No answer from Oracle at ${where} in time`);
        }
        session = opened;
        const privileges = (
          await opened.execute(
            "SELECT privilege FROM session_privs WHERE privilege IN ('CREATE TABLE', 'CREATE ANY TABLE')",
          )
        ).map((r) => String(r[0]));
        const warnings =
          privileges.length === 0
            ? ['The user lacks CREATE TABLE: the target tables must exist before the first rows arrive']
            : [];
        return { server_version: opened.serverVersion, warnings };
      })(),
      opts.timeoutMs,
      `Oracle at ${where}`,
    );
  } catch (e) {
    abandoned = true;
    if (e instanceof SystemFailure) throw e;
    throw new SystemFailure(describeOracleError(e, where, session ? 'session' : 'connect'), {
      cause: e,
    });
  } finally {
    await session?.close().catch(() => undefined);
  }
}
