import type mysql from 'mysql2/promise';
import { SystemFailure, withDeadline } from '../failure.js';
import {
  mysqlWhere,
  openMysql,
  type MysqlConfig,
  type MysqlEngine,
  type MysqlSession,
} from './connection.js';
import {
  binlogShortfalls,
  describeMysqlFailure,
  REPLICATION_GRANTS_MISSING,
  type BinlogSettings,
} from './errors.js';
import type { ColumnInfo, PgCheckOptions, TableInfo } from '../postgres/probes.js';

// Pre-flight checks of a MySQL or MariaDB source (spec 4.5): log in, list
// tables, read columns — over a connection opened as the capture opens its
// own (connection.ts: the outbound policy, or the SSH tunnel of `ssh_host`),
// with a short connect deadline and read-only catalog queries
// (information_schema). The check says what the binlog capture
// (sources/mysql-cdc/) needs of the server.

type Engine = MysqlEngine;
type Config = MysqlConfig;

/** Schemas of the server itself, never offered as capture candidates. */
const SYSTEM_SCHEMAS = ['mysql', 'information_schema', 'performance_schema', 'sys'];

/**
 * Runs `fn` on a short-lived connection; any failure becomes a
 * SystemFailure with one sentence for the user.
 */
export async function withMysql<T>(
  engine: Engine,
  config: Config,
  opts: PgCheckOptions,
  fn: (c: mysql.Connection) => Promise<T>,
): Promise<T> {
  const where = mysqlWhere(config);
  let session: MysqlSession | undefined;
  try {
    session = await openMysql(config, opts);
    // A connection error after the check answered must not crash the gateway.
    session.conn.on('error', () => undefined);
    return await withDeadline(fn(session.conn), opts.timeoutMs, `${engine} at ${where}`);
  } catch (e) {
    throw new SystemFailure(describeMysqlFailure(e, engine, where), { cause: e });
  } finally {
    await session?.close();
  }
}

interface ServerFacts extends BinlogSettings {
  version: string;
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
    const warnings = binlogShortfalls(facts);
    const all = /GRANT ALL PRIVILEGES ON \*\.\*/i.test(granted);
    // MariaDB 10.5+ spells REPLICATION CLIENT as BINLOG MONITOR in its grants.
    const slave = all || /REPLICATION SLAVE|REPLICATION REPLICA/i.test(granted);
    const client = all || /REPLICATION CLIENT|BINLOG MONITOR/i.test(granted);
    if (!slave || !client) {
      warnings.push(REPLICATION_GRANTS_MISSING);
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
