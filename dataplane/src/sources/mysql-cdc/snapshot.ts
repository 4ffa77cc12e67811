import type mysql from 'mysql2/promise';
import { changeEvent } from '../../contracts.js';
import type { MysqlEngine } from '../../systems/mysql/connection.js';
import type { TableShape } from './columns.js';
import { MysqlCdcError, type MysqlCdcOptions } from './contract.js';
import { readPaged } from '../paged-read.js';
import {
  boundAfter,
  qualified,
  quoteId,
  RAW,
  readKeyPage,
  rowOf,
  type KeyBound,
  type RawRow,
} from './key-pages.js';
import { executedGtidPosition } from './gtid-set.js';
import { formatPosition, type BinlogPosition } from './position.js';
import { binlogStatus, gtidAt, NO_BINLOG } from './server-position.js';

// The initial snapshot: every whitelisted table read (op `r`) in one
// REPEATABLE READ transaction started WITH CONSISTENT SNAPSHOT, and the
// binary log position that snapshot is consistent with, where the stream
// then starts. MariaDB reports that position itself (Binlog_snapshot_file
// and _position, read under the transaction: no lock at all); MySQL does
// not, so there the position is read under a global read lock held only
// between the transaction's start and that read (Debezium's and
// mysqldump --single-transaction --master-data's method). Each table is read
// in primary-key order, in chunks of `snapshotChunkRows` (keyset pages: each
// query is short and holds little: key-pages.ts), and its events are
// flushed once read.

export interface SnapshotTable {
  shape: TableShape;
  datamodelId: string;
}

async function startConsistentSnapshot(conn: mysql.Connection, engine: MysqlEngine): Promise<BinlogPosition> {
  await conn.query("SET SESSION time_zone = '+00:00'");
  await conn.query('SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ');
  if (engine === 'MariaDB') {
    await conn.query('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
    const [rows] = await conn.query("SHOW STATUS LIKE 'binlog_snapshot_%'");
    const status = new Map(
      (rows as { Variable_name: string; Value: string }[]).map((r) => [
        r.Variable_name.toLowerCase(),
        r.Value,
      ]),
    );
    const file = status.get('binlog_snapshot_file') ?? '';
    const offset = Number(status.get('binlog_snapshot_position') ?? 0);
    if (!file) throw new MysqlCdcError(NO_BINLOG);
    return { file, offset, gtid: await gtidAt(conn, file, offset) };
  }
  await conn.query('FLUSH TABLES WITH READ LOCK').catch((e: unknown) => {
    throw new MysqlCdcError(
      `The snapshot needs a brief global read lock to read its binary log position, which the server refused (grant RELOAD): ${String((e as Error).message)}`,
    );
  });
  try {
    await conn.query('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
    // Under the lock, the executed GTID set matches the file and offset: the position where the server has GTIDs.
    return { ...(await binlogStatus(conn)), gtid: await executedGtidPosition(conn) };
  } finally {
    await conn.query('UNLOCK TABLES');
  }
}

/** Reads every table; resolves with the position the stream starts from. */
export async function readSnapshot(
  conn: mysql.Connection,
  engine: MysqlEngine,
  tables: readonly SnapshotTable[],
  options: MysqlCdcOptions,
  signal: AbortSignal,
): Promise<BinlogPosition> {
  const chunk = options.snapshotChunkRows ?? 2000;
  const start = await startConsistentSnapshot(conn, engine);
  const position = formatPosition(start);
  options.log?.(
    'info',
    `snapshot consistent with ${start.file}:${start.offset}${start.gtid ? ` (GTID ${start.gtid})` : ''}`,
  );
  try {
    for (const { shape, datamodelId } of tables) {
      const ts = Date.now();
      const entry = `${shape.schema}.${shape.table}`;
      const key = shape.primaryKey.length > 0 ? shape.primaryKey : shape.columns.map((c) => c.name);
      const emit = async (raw: RawRow) => {
        const row = rowOf(shape, raw);
        await options.onEvent(
          changeEvent({
            op: 'r',
            before: null,
            after: row,
            keyColumns: key,
            connector_id: options.connectorId,
            datamodel_id: datamodelId,
            entry,
            position,
            snapshot: true,
            tsMs: ts,
          }),
        );
        return row;
      };
      let rows: number;
      if (shape.primaryKey.length > 0) {
        let after: KeyBound | null = null;
        rows = await readPaged(
          chunk,
          async () => {
            const page = await readKeyPage(conn, shape, after, chunk);
            if (page.length > 0) after = boundAfter(shape, page[page.length - 1]!);
            return page;
          },
          emit,
          signal,
        );
      } else {
        // No key to page by: one streaming read, its pace set by onEvent.
        const columns = shape.columns.map((c) => quoteId(c.name)).join(', ');
        rows = 0;
        const driver = (
          conn as unknown as {
            connection: { query(o: object): { stream(o: object): AsyncIterable<unknown> } };
          }
        ).connection;
        const stream = driver
          .query({ sql: `SELECT ${columns} FROM ${qualified(shape)}`, ...RAW })
          .stream({ highWaterMark: chunk });
        for await (const raw of stream) {
          signal.throwIfAborted();
          await emit(raw as RawRow);
          rows += 1;
        }
      }
      await options.flush();
      options.log?.('info', `snapshot of ${entry} complete`, { rows });
    }
    await conn.query('COMMIT');
  } catch (error) {
    await conn.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
  return start;
}
