import { createHash } from 'node:crypto';
import { mysqlWhere, openMysql, type MysqlSession } from '../../systems/mysql/connection.js';
import { binlogShortfalls, describeMysqlFailure, type BinlogSettings } from '../../systems/mysql/errors.js';
import { SystemFailure } from '../../systems/failure.js';
import { readCollations, readTableShape, type TableShape } from './columns.js';
import { capturedTable, type CapturedTable } from './recorded-tables.js';
import {
  MysqlCdcError,
  type MysqlCdcCapture,
  type MysqlCdcOptions,
  type MysqlSourceSettings,
} from './contract.js';
import { readSnapshot } from './snapshot.js';
import { BinlogStream } from './stream.js';

// The MYSQL_SOURCE / MARIADB_SOURCE capture: the server's row-based binary
// log read as a replica reads it. The first start (no recorded position)
// takes a consistent snapshot of every whitelisted table and records the
// log position it is consistent with once its events were acknowledged;
// every start then streams from the recorded position. Three connections:
// the catalog (table definitions), the snapshot, and the dump.
// docs/data-plane-mysql.md. The parts: snapshot.ts, stream.ts (with
// binlog-dump.ts, binlog-events.ts, row-values.ts), position-store.ts.

const CONNECT_TIMEOUT_MS = 15_000;

/** The replica id: the configured `server_id`, else one derived from the connector id (stable across restarts). */
export function replicaServerId(settings: MysqlSourceSettings, connectorId: string): number {
  if (typeof settings.server_id === 'number') return settings.server_id;
  const h = createHash('sha256').update(connectorId).digest().readUInt32BE(0);
  // Away from the small ids servers are usually given.
  return 100_000 + (h % 4_000_000_000);
}

/** Whether a query failed because its connection is gone (closed by the server, the network, or mysql2 itself). */
function connectionLost(error: unknown): boolean {
  const e = error as { code?: unknown; fatal?: unknown; message?: unknown };
  return (
    e.fatal === true ||
    /closed state|PROTOCOL_CONNECTION_LOST|ECONNRESET|EPIPE/.test(`${String(e.code)} ${String(e.message)}`)
  );
}

export function parseMysqlEntry(entry: string, fallback?: string): { schema: string; table: string } {
  const dot = entry.indexOf('.');
  if (dot > 0) return { schema: entry.slice(0, dot), table: entry.slice(dot + 1) };
  if (!fallback)
    throw new MysqlCdcError(
      `"${entry}" names no database: write it "database.table" or set the connection's database`,
    );
  return { schema: fallback, table: entry };
}

export async function startMysqlCdc(
  settings: MysqlSourceSettings,
  options: MysqlCdcOptions,
  signal: AbortSignal,
): Promise<MysqlCdcCapture> {
  const where = mysqlWhere(settings);
  const engine = options.engine;
  const sessions: MysqlSession[] = [];
  const open = async () => {
    const s = await openMysql(settings, { policy: options.policy, timeoutMs: CONNECT_TIMEOUT_MS });
    sessions.push(s);
    return s;
  };
  const connection = async () => {
    const s = await open();
    // Failures surface on the next query or the dump; an unhandled 'error' event must not crash the worker.
    s.conn.on('error', () => undefined);
    return s.conn;
  };
  const closeAll = () => Promise.all(sessions.map((s) => s.close())).then(() => undefined);
  const describe = (error: unknown, doing: string) =>
    error instanceof MysqlCdcError || error instanceof SystemFailure
      ? error
      : new MysqlCdcError(`${doing} failed: ${describeMysqlFailure(error, engine, where)}`);
  try {
    let catalog = await connection();
    // The catalog connection idles between table maps, possibly past the server's wait_timeout:
    // a read that finds it closed opens another and reads again.
    const onCatalog = async <T>(read: (c: typeof catalog) => Promise<T>): Promise<T> => {
      try {
        return await read(catalog);
      } catch (error) {
        if (!connectionLost(error)) throw error;
        catalog = await connection();
        return read(catalog);
      }
    };
    const readShape = (schema: string, table: string) => onCatalog((c) => readTableShape(c, schema, table));
    let collationsRead: Promise<ReadonlyMap<number, string>> | undefined;
    const collations = () =>
      (collationsRead ??= onCatalog(readCollations).catch((error: unknown) => {
        collationsRead = undefined;
        throw error;
      }));
    const [rows] = await catalog.query(
      'select @@global.log_bin as log_bin, @@global.binlog_format as binlog_format, @@global.binlog_row_image as binlog_row_image',
    );
    const shortfalls = binlogShortfalls((rows as BinlogSettings[])[0]!);
    if (shortfalls.length > 0) throw new MysqlCdcError(`${engine} at ${where}: ${shortfalls.join('; ')}`);
    // Without column names in the log, older changes are matched to an altered table by position (stream.ts).
    const [metadata] = await catalog
      .query('select @@global.binlog_row_metadata as m')
      .catch(() => [[{ m: null }]] as const);
    const logged = (metadata as { m: string | null }[])[0]?.m;
    if (logged && logged.toUpperCase() !== 'FULL') {
      options.log?.(
        'warn',
        `binlog_row_metadata is ${logged}: set it to FULL so that changes written before an ALTER TABLE are matched to their columns by name`,
      );
    }
    let start = await options.loadPosition();
    const tables = new Map<string, { datamodelId: string } & CapturedTable>();
    const snapshotTables: { shape: TableShape; datamodelId: string }[] = [];
    for (const t of options.tables) {
      const { schema, table } = parseMysqlEntry(t.entry, settings.database);
      const shape = await readShape(schema, table);
      if (!shape) {
        throw new MysqlCdcError(
          `${engine} at ${where} has no table ${schema}.${table} that this user can read`,
        );
      }
      // Resuming, the definition in force at the recorded position, not the catalog's newer one.
      const recorded = start?.tables?.[`${schema}.${table}`];
      tables.set(`${schema}.${table}`, {
        datamodelId: t.datamodelId,
        ...capturedTable(recorded ?? { shape }),
      });
      snapshotTables.push({ shape, datamodelId: t.datamodelId });
    }
    // The dump never ends by itself: its connection is dropped, not quit, when the capture stops.
    const dumpSession = await open();
    dumpSession.conn.on('error', () => undefined);
    const dumpConnection = dumpSession.conn;
    let run: BinlogStream | undefined;
    const stream = async () => {
      if (!start) {
        const snapshotConnection = await connection();
        const read = await readSnapshot(snapshotConnection, engine, snapshotTables, options, signal);
        start = {
          ...read,
          tables: Object.fromEntries([...tables].map(([entry, t]) => [entry, { shape: t.shape }])),
        };
        await options.savePosition(start);
        options.log?.('info', 'snapshot complete');
      } else {
        options.log?.(
          'info',
          `resuming at ${start.file}:${start.offset}${start.gtid ? ` (GTID ${start.gtid})` : ''}`,
        );
      }
      run = new BinlogStream(
        {
          readShape,
          collations,
          dumpConnection,
          serverId: replicaServerId(settings, options.connectorId),
          where,
        },
        options,
        tables,
        start,
        signal,
      );
      await run.run();
    };
    const done = stream()
      .catch((error: unknown) => {
        if (signal.aborted) return;
        throw describe(error, 'The capture');
      })
      .finally(() => {
        dumpSession.destroy();
        return closeAll();
      });
    const positions = () => {
      if (run) return { read: run.readPosition, needed: run.recorded };
      return start ? { read: start, needed: start } : null;
    };
    return { done, positions };
  } catch (error) {
    await closeAll();
    throw describe(error, `Starting the capture of ${engine} at ${where}`);
  }
}
