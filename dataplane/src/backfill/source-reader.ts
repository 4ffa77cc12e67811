import type mysql from 'mysql2/promise';
import type { OutboundPolicy } from '@sluice/shared/net';
import { SystemFailure, withDeadline } from '../systems/failure.js';
import { mysqlWhere, openMysql, type MysqlEngine, type MysqlSession } from '../systems/mysql/connection.js';
import { describeMysqlFailure } from '../systems/mysql/errors.js';
import { openSession, pgWhere, type PostgresSettings } from '../systems/postgres/connection.js';
import { describePgFailure } from '../systems/postgres/errors.js';
import { parseMysqlEntry } from '../sources/mysql-cdc/capture.js';
import { readTableShape } from '../sources/mysql-cdc/columns.js';
import {
  boundAfter,
  boundFromJson,
  boundToJson,
  qualified,
  readKeyPage,
  rowOf,
} from '../sources/mysql-cdc/key-pages.js';
import { estimateTableRows, keyValuesOf, readTablePage, tableKey } from './table-pages.js';

// A database source's tables as a re-snapshot (a backfill) and a preview
// read them: in primary-key order, a keyset page at a time, each row's
// values as the source worker's own snapshot publishes them. PostgreSQL
// through table-pages.ts; MySQL and MariaDB through the capture's own page
// read (sources/mysql-cdc/key-pages.ts). The connection is the workers' and
// the pre-flight checks': the outbound-address policy, or the SSH tunnel of
// `ssh_host`. Each page is one short query: no transaction is held across
// pages, and a page's `next` (JSON) is where a resumed read starts.

/** The source types whose tables this reads (a backfill's `snapshot` mode). */
export const TABLE_SOURCE_TYPES: readonly string[] = ['POSTGRES_SOURCE', 'MYSQL_SOURCE', 'MARIADB_SOURCE'];

export interface TablePage {
  rows: Record<string, unknown>[];
  /** Where the page after this one starts (JSON); null when this page is empty. */
  next: unknown[] | null;
}

export interface TableReader {
  /** The primary-key columns in key order: the events' key. */
  keyColumns: string[];
  /** The next `limit` rows after `after` (a page's `next`; null: from the start), in key order. */
  page(after: unknown[] | null, limit: number): Promise<TablePage>;
}

export interface SourceReader {
  /** The table of `entry`; refused (a SystemFailure) when it does not exist or has no primary key. */
  table(entry: string): Promise<TableReader>;
  /** The server's estimate of the table's rows (a count when it has none). */
  estimateRows(entry: string): Promise<number>;
  /** A failure of this source in one sentence (the pre-flight checks' wording). */
  describe(error: unknown): string;
  close(): Promise<void>;
  /** MySQL and MariaDB: the open connection, for the binary log's position (binlog-resume.ts). */
  binlog?: { conn: mysql.Connection; engine: MysqlEngine };
}

export interface SourceReaderOptions {
  policy: OutboundPolicy;
  connectTimeoutMs: number;
  /** Deadline of one query (PostgreSQL's statement timeout); none when omitted. */
  queryTimeoutMs?: number;
  applicationName: string;
}

const noKey = (entry: string) =>
  new SystemFailure(`Table ${entry} has no primary key: a re-snapshot reads tables in key order`);
const noTable = (entry: string) => new SystemFailure(`Table ${entry} does not exist in the source database`);

const ENGINES: Record<string, MysqlEngine> = { MYSQL_SOURCE: 'MySQL', MARIADB_SOURCE: 'MariaDB' };

/** Opens a reader of the source's tables; throws the driver's error (`describeSourceReaderFailure` says it). */
export async function openSourceReader(
  connectorType: string,
  config: Record<string, unknown>,
  o: SourceReaderOptions,
): Promise<SourceReader> {
  const engine = ENGINES[connectorType];
  if (engine) return mysqlReader(engine, config, o);
  if (connectorType !== 'POSTGRES_SOURCE')
    throw new SystemFailure(`Reading a ${connectorType} table is not supported by this version of Sluice`);
  return postgresReader(config, o);
}

/** One sentence for a failure opening or reading the source (no stack, no statement, no secret). */
export function describeSourceReaderFailure(
  connectorType: string,
  config: Record<string, unknown>,
  error: unknown,
): string {
  const engine = ENGINES[connectorType];
  return engine
    ? describeMysqlFailure(error, engine, mysqlWhere(config))
    : describePgFailure(error, pgWhere(pgSettings(config)));
}

/** `fn` on a reader of the source, within `queryTimeoutMs`; any failure is a SystemFailure with its sentence. */
export async function withSourceReader<T>(
  connectorType: string,
  config: Record<string, unknown>,
  o: SourceReaderOptions & { queryTimeoutMs: number },
  fn: (reader: SourceReader) => Promise<T>,
): Promise<T> {
  let reader: SourceReader | undefined;
  try {
    reader = await openSourceReader(connectorType, config, o);
    return await withDeadline(fn(reader), o.queryTimeoutMs, 'the source database');
  } catch (e) {
    throw new SystemFailure(describeSourceReaderFailure(connectorType, config, e), { cause: e });
  } finally {
    await reader?.close();
  }
}

const pgSettings = (c: Record<string, unknown>): PostgresSettings => ({
  ...(c as unknown as PostgresSettings),
  port: typeof c.port === 'number' ? c.port : 5432,
});

async function postgresReader(
  config: Record<string, unknown>,
  o: SourceReaderOptions,
): Promise<SourceReader> {
  const settings = pgSettings(config);
  const client = await openSession(settings, {
    policy: o.policy,
    applicationName: o.applicationName,
    connectTimeoutMs: o.connectTimeoutMs,
    ...(o.queryTimeoutMs === undefined ? {} : { queryTimeoutMs: o.queryTimeoutMs }),
  });
  return {
    async table(entry) {
      const key = await tableKey(client, entry);
      return {
        keyColumns: key.columns,
        async page(after, limit) {
          const rows = await readTablePage(client, entry, key, after, limit);
          const last = rows[rows.length - 1];
          return { rows, next: last ? keyValuesOf(last, key) : null };
        },
      };
    },
    estimateRows: (entry) => estimateTableRows(client, entry),
    describe: (e) => describePgFailure(e, pgWhere(settings)),
    close: () => client.end().catch(() => undefined),
  };
}

async function mysqlReader(
  engine: MysqlEngine,
  config: Record<string, unknown>,
  o: SourceReaderOptions,
): Promise<SourceReader> {
  const session: MysqlSession = await openMysql(config, { policy: o.policy, timeoutMs: o.connectTimeoutMs });
  // A connection error after the last answer must not crash the process: the next query fails.
  session.conn.on('error', () => undefined);
  const { conn } = session;
  const database = typeof config.database === 'string' ? config.database : undefined;
  const nameOf = (entry: string) => {
    try {
      return parseMysqlEntry(entry, database);
    } catch (e) {
      throw new SystemFailure((e as Error).message);
    }
  };
  try {
    // As the capture's snapshot reads: TIMESTAMP values in UTC (row-values.ts).
    await conn.query("SET SESSION time_zone = '+00:00'");
  } catch (e) {
    await session.close();
    throw e;
  }
  return {
    async table(entry) {
      const { schema, table } = nameOf(entry);
      const shape = await readTableShape(conn, schema, table);
      if (!shape) throw noTable(entry);
      if (shape.primaryKey.length === 0) throw noKey(entry);
      return {
        keyColumns: shape.primaryKey,
        async page(after, limit) {
          const raw = await readKeyPage(conn, shape, after ? boundFromJson(shape, after) : null, limit);
          const last = raw[raw.length - 1];
          return {
            rows: raw.map((r) => rowOf(shape, r)),
            next: last ? boundToJson(boundAfter(shape, last)) : null,
          };
        },
      };
    },
    async estimateRows(entry) {
      const name = nameOf(entry);
      const [rows] = await conn.query(
        'select table_rows as n from information_schema.tables where table_schema = ? and table_name = ?',
        [name.schema, name.table],
      );
      const list = rows as { n: number | string | null }[];
      if (list.length === 0) throw noTable(entry);
      const n = Number(list[0]!.n ?? 0);
      // InnoDB's statistics lag behind a table just filled: a count then (a small table, most likely).
      if (n > 0) return n;
      const [counted] = await conn.query(`select count(*) as n from ${qualified(name)}`);
      return Number((counted as { n: number | string }[])[0]?.n ?? 0);
    },
    describe: (e) => describeMysqlFailure(e, engine, mysqlWhere(config)),
    close: () => session.close(),
    binlog: { conn, engine },
  };
}
