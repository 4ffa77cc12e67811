import type pg from 'pg';
import type { OutboundPolicy } from '@sluice/shared/net';
import { openSession, pgWhere, type PostgresSettings } from './connection.js';
import { SystemFailure } from '../failure.js';
import { sshTunnelOf } from '../ssh/connection.js';
import { describePgFailure } from './errors.js';

// Pre-flight checks of a PostgreSQL source or target (spec 4.5): the workers'
// connection (dataplane/src/systems/postgres/connection.ts: policy-checked
// socket or the SSH tunnel, libpq ssl modes, UTC session), a short connect
// deadline and a statement timeout, read-only queries of the catalog only.

export interface PgCheckOptions {
  policy: OutboundPolicy;
  timeoutMs: number;
}

export interface TableInfo {
  /** `schema.table`, as the capture list (`whitelist`) spells it. */
  name: string;
  schema: string;
  table: string;
  primary_key: string[];
}

export interface ColumnInfo {
  name: string;
  type: string;
  nullable: boolean;
  primary_key: boolean;
}

function settingsOf(config: Record<string, unknown>): PostgresSettings {
  return {
    host: String(config.host ?? ''),
    port: typeof config.port === 'number' ? config.port : 5432,
    database: String(config.database ?? ''),
    user: String(config.user ?? ''),
    password: typeof config.password === 'string' ? config.password : '',
    ...(typeof config.ssl_mode === 'string'
      ? { ssl_mode: config.ssl_mode as PostgresSettings['ssl_mode'] }
      : {}),
    ...(typeof config.ssl_root_cert === 'string' ? { ssl_root_cert: config.ssl_root_cert } : {}),
    ...sshTunnelOf(config),
  };
}

/**
 * Runs `fn` on a short-lived connection (the checks' deadlines); any failure
 * becomes a SystemFailure with one sentence for the user. Also the
 * subscription preview's connection to a source or target.
 */
export async function withPg<T>(
  config: Record<string, unknown>,
  opts: PgCheckOptions,
  fn: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const settings = settingsOf(config);
  const where = pgWhere(settings);
  let client: pg.Client | undefined;
  try {
    client = await openSession(settings, {
      policy: opts.policy,
      applicationName: 'sluice-preflight',
      connectTimeoutMs: opts.timeoutMs,
      queryTimeoutMs: opts.timeoutMs,
    });
    return await fn(client);
  } catch (e) {
    throw new SystemFailure(describePgFailure(e, where), { cause: e });
  } finally {
    await client?.end().catch(() => undefined);
  }
}

/** check-credentials: log in and ask the server its version (and, for a CDC source, the replication needs). */
export async function checkPostgres(
  config: Record<string, unknown>,
  opts: PgCheckOptions,
  role: 'source' | 'target',
): Promise<{ server_version: string; warnings: string[] }> {
  return withPg(config, opts, async (client) => {
    const r = await client.query<{ version: string; wal_level: string; replication: boolean }>(
      `select current_setting('server_version') as version,
              current_setting('wal_level') as wal_level,
              coalesce((select rolreplication or rolsuper from pg_roles where rolname = current_user), false) as replication`,
    );
    const row = r.rows[0]!;
    const warnings: string[] = [];
    if (role === 'source') {
      if (row.wal_level !== 'logical') {
        warnings.push(
          `wal_level is "${row.wal_level}": change data capture needs wal_level=logical (then a server restart)`,
        );
      }
      if (!row.replication)
        warnings.push('The user lacks the REPLICATION attribute that change data capture needs');
    }
    return { server_version: row.version, warnings };
  });
}

/** list-tables: ordinary and partitioned tables the user can see, system schemas left out, with their primary keys. */
export async function listPostgresTables(
  config: Record<string, unknown>,
  opts: PgCheckOptions,
): Promise<TableInfo[]> {
  return withPg(config, opts, async (client) => {
    const r = await client.query<{ schema: string; table: string; primary_key: string[] | null }>(
      `select n.nspname as schema, c.relname as "table",
              (select array_agg(a.attname::text order by k.ord)
                 from pg_index i
                 cross join lateral unnest(i.indkey) with ordinality as k(attnum, ord)
                 join pg_attribute a on a.attrelid = c.oid and a.attnum = k.attnum
                where i.indrelid = c.oid and i.indisprimary) as primary_key
         from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where c.relkind in ('r', 'p')
          and n.nspname not in ('pg_catalog', 'information_schema')
          and n.nspname not like 'pg\\_toast%' and n.nspname not like 'pg\\_temp%'
          and has_table_privilege(c.oid, 'select')
        order by 1, 2
        limit 10000`,
    );
    return r.rows.map((row) => ({
      name: `${row.schema}.${row.table}`,
      schema: row.schema,
      table: row.table,
      primary_key: row.primary_key ?? [],
    }));
  });
}

/** fetch-schema: the columns (name, type as PostgreSQL formats it, nullability, key) of each named table. */
export async function fetchPostgresSchema(
  config: Record<string, unknown>,
  tables: string[],
  opts: PgCheckOptions,
): Promise<{ name: string; exists: boolean; columns: ColumnInfo[] }[]> {
  const split = tables.map((t) => {
    const i = t.indexOf('.');
    return i > 0
      ? { name: t, schema: t.slice(0, i), table: t.slice(i + 1) }
      : { name: t, schema: 'public', table: t };
  });
  return withPg(config, opts, async (client) => {
    const r = await client.query<{
      schema: string;
      table: string;
      column: string;
      type: string;
      nullable: boolean;
      primary_key: boolean;
    }>(
      `select n.nspname as schema, c.relname as "table", a.attname as "column",
              format_type(a.atttypid, a.atttypmod) as type, not a.attnotnull as nullable,
              exists (select 1 from pg_index i where i.indrelid = c.oid and i.indisprimary
                        and a.attnum = any (i.indkey)) as primary_key
         from unnest($1::text[], $2::text[]) as w(s, t)
         join pg_namespace n on n.nspname = w.s
         join pg_class c on c.relnamespace = n.oid and c.relname = w.t and c.relkind in ('r', 'p', 'v', 'm')
         join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
        order by n.nspname, c.relname, a.attnum`,
      [split.map((s) => s.schema), split.map((s) => s.table)],
    );
    return split.map((s) => {
      const columns = r.rows
        .filter((row) => row.schema === s.schema && row.table === s.table)
        .map((row) => ({
          name: row.column,
          type: row.type,
          nullable: row.nullable,
          primary_key: row.primary_key,
        }));
      return { name: s.name, exists: columns.length > 0, columns };
    });
  });
}
