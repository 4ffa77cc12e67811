import { connect as netConnect, isIP } from 'node:net';
import mysql, { type SslOptions as TlsOptions } from 'mysql2/promise';
import { SystemFailure, withDeadline } from '../failure.js';
import { acquireTunnel, sshTunnelOf, viaBastion, type TunnelLease } from '../ssh/connection.js';
import { describeMysqlFailure } from './errors.js';
import type { ColumnInfo, PgCheckOptions, TableInfo } from '../postgres/probes.js';

// Pre-flight checks of a MySQL or MariaDB source (spec 4.5): log in, list
// tables, read columns — over a socket opened under the outbound-address
// policy (or through the SSH tunnel of `ssh_host`, the policy then applied to
// the bastion), with a short connect deadline and read-only catalog queries
// (information_schema). The binlog capture itself comes in a later version
// (MYSQL_SOURCE / MARIADB_SOURCE workers end in `error`, "not supported");
// the check already says what that capture will need of the server.

type Engine = 'MySQL' | 'MariaDB';
type Config = Record<string, unknown>;

/** Schemas of the server itself, never offered as capture candidates. */
const SYSTEM_SCHEMAS = ['mysql', 'information_schema', 'performance_schema', 'sys'];

function tlsFor(config: Config): TlsOptions | undefined {
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
 * Runs `fn` on a short-lived connection; any failure becomes a
 * SystemFailure with one sentence for the user. `preferred` falls back to
 * a plain connection only when the server offers no TLS at all.
 */
export async function withMysql<T>(
  engine: Engine,
  config: Config,
  opts: PgCheckOptions,
  fn: (c: mysql.Connection) => Promise<T>,
): Promise<T> {
  const host = String(config.host ?? '');
  const port = typeof config.port === 'number' ? config.port : 3306;
  const where = `${host}:${port}${viaBastion(config)}`;
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
    });
  };
  let conn: mysql.Connection | undefined;
  try {
    if (ssh) {
      lease = await acquireTunnel(
        ssh,
        { host, port },
        { policy: opts.policy, handshakeTimeoutMs: opts.timeoutMs },
      );
    }
    const ssl = tlsFor(config);
    try {
      conn = await open(ssl);
    } catch (e) {
      const preferred = (config.ssl_mode ?? 'preferred') === 'preferred';
      if (!preferred || (e as { code?: string }).code !== 'HANDSHAKE_NO_SSL_SUPPORT') throw e;
      conn = await open(undefined);
    }
    // A connection error after the check answered must not crash the gateway.
    conn.on('error', () => undefined);
    return await withDeadline(fn(conn), opts.timeoutMs, `${engine} at ${where}`);
  } catch (e) {
    throw new SystemFailure(describeMysqlFailure(e, engine, where), { cause: e });
  } finally {
    await conn?.end().catch(() => conn?.destroy());
    lease?.release();
  }
}

interface ServerFacts {
  version: string;
  log_bin: number | string | null;
  binlog_format: string | null;
  binlog_row_image: string | null;
}

/** check-credentials: log in, read the version and what binlog capture will need. */
export async function checkMysql(
  engine: Engine,
  config: Config,
  opts: PgCheckOptions,
): Promise<{ server_version: string; warnings: string[] }> {
  return withMysql(engine, config, opts, async (c) => {
    const [rows] = await c.query(
      'select version() as version, @@global.log_bin as log_bin, @@global.binlog_format as binlog_format, @@global.binlog_row_image as binlog_row_image',
    );
    const facts = (rows as ServerFacts[])[0]!;
    const [grants] = await c.query('show grants for current_user()');
    const granted = (grants as Record<string, string>[]).map((g) => Object.values(g)[0] ?? '').join('\n');
    const warnings: string[] = [];
    if (String(facts.log_bin) !== '1' && String(facts.log_bin).toUpperCase() !== 'ON') {
      warnings.push('The binary log is off (log_bin): change data capture needs it');
    }
    if (facts.binlog_format && facts.binlog_format.toUpperCase() !== 'ROW') {
      warnings.push(`binlog_format is "${facts.binlog_format}": change data capture needs ROW`);
    }
    if (facts.binlog_row_image && facts.binlog_row_image.toUpperCase() !== 'FULL') {
      warnings.push(`binlog_row_image is "${facts.binlog_row_image}": change data capture needs FULL`);
    }
    const all = /GRANT ALL PRIVILEGES ON \*\.\*/i.test(granted);
    // MariaDB 10.5+ spells REPLICATION CLIENT as BINLOG MONITOR in its grants.
    const slave = all || /REPLICATION SLAVE|REPLICATION REPLICA/i.test(granted);
    const client = all || /REPLICATION CLIENT|BINLOG MONITOR/i.test(granted);
    if (!slave || !client) {
      warnings.push(
        'The user lacks REPLICATION SLAVE and REPLICATION CLIENT, which change data capture needs',
      );
    }
    return { server_version: facts.version, warnings };
  });
}

/** list-tables: base tables the user can see, system schemas left out, with their primary keys. */
export async function listMysqlTables(
  engine: Engine,
  config: Config,
  opts: PgCheckOptions,
): Promise<TableInfo[]> {
  return withMysql(engine, config, opts, async (c) => {
    const [rows] = await c.query(
      `select t.table_schema as \`schema\`, t.table_name as \`table\`,
              (select group_concat(k.column_name order by k.ordinal_position separator '\\n')
                 from information_schema.key_column_usage k
                where k.table_schema = t.table_schema and k.table_name = t.table_name
                  and k.constraint_name = 'PRIMARY') as primary_key
         from information_schema.tables t
        where t.table_type = 'BASE TABLE' and t.table_schema not in (?)
        order by 1, 2
        limit 10000`,
      [SYSTEM_SCHEMAS],
    );
    return (rows as { schema: string; table: string; primary_key: string | null }[]).map((r) => ({
      name: `${r.schema}.${r.table}`,
      schema: r.schema,
      table: r.table,
      primary_key: r.primary_key ? r.primary_key.split('\n') : [],
    }));
  });
}

/** fetch-schema: the columns (name, type as the server spells it, nullability, key) of each `database.table`. */
export async function fetchMysqlSchema(
  engine: Engine,
  config: Config,
  tables: string[],
  opts: PgCheckOptions,
): Promise<{ name: string; exists: boolean; columns: ColumnInfo[] }[]> {
  const fallback = typeof config.database === 'string' ? config.database : undefined;
  const split = tables.map((t) => {
    const i = t.indexOf('.');
    return i > 0
      ? { name: t, schema: t.slice(0, i), table: t.slice(i + 1) }
      : { name: t, schema: fallback, table: t };
  });
  const unqualified = split.find((s) => s.schema === undefined);
  if (unqualified) {
    throw new SystemFailure(
      `"${unqualified.name}" names no database: write it "database.table" or set the connection's database`,
    );
  }
  return withMysql(engine, config, opts, async (c) => {
    const pairs = split.map((s) => [s.schema as string, s.table]);
    const [rows] = await c.query(
      `select table_schema as \`schema\`, table_name as \`table\`, column_name as \`column\`,
              column_type as type, is_nullable = 'YES' as nullable, column_key = 'PRI' as primary_key
         from information_schema.columns
        where (table_schema, table_name) in (?)
        order by table_schema, table_name, ordinal_position`,
      [pairs],
    );
    const list = rows as {
      schema: string;
      table: string;
      column: string;
      type: string;
      nullable: number;
      primary_key: number;
    }[];
    return split.map((s) => {
      const columns = list
        .filter((r) => r.schema === s.schema && r.table === s.table)
        .map((r) => ({
          name: r.column,
          type: r.type,
          nullable: Boolean(r.nullable),
          primary_key: Boolean(r.primary_key),
        }));
      return { name: s.name, exists: columns.length > 0, columns };
    });
  });
}
