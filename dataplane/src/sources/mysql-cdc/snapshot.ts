import type mysql from 'mysql2/promise';
import { changeEvent } from '../../contracts.js';
import type { MysqlEngine } from '../../systems/mysql/connection.js';
import type { TableShape } from './columns.js';
import { MysqlCdcError, type MysqlCdcOptions } from './contract.js';
import { formatPosition, type BinlogPosition } from './position.js';
import { snapshotValue } from './row-values.js';

// The initial snapshot: every whitelisted table read (op `r`) in one
// REPEATABLE READ transaction started WITH CONSISTENT SNAPSHOT, and the
// binary log position that snapshot is consistent with, where the stream
// then starts. MariaDB reports that position itself (Binlog_snapshot_file
// and _position, read under the transaction: no lock at all); MySQL does
// not, so there the position is read under a global read lock held only
// between the transaction's start and that read (Debezium's and
// mysqldump --single-transaction --master-data's method). Each table is read
// in primary-key order, in chunks of `snapshotChunkRows` (keyset pages: each
// query is short and holds little), and its events are flushed once read.

export interface SnapshotTable {
  shape: TableShape;
  datamodelId: string;
}

export const quoteId = (name: string) => '`' + name.replace(/`/g, '``') + '`';
export const qualified = (s: { schema: string; table: string }) => `${quoteId(s.schema)}.${quoteId(s.table)}`;

/** Every value as the bytes of the text protocol: row-values.ts converts them by column. */
const RAW = { typeCast: (field: { buffer(): Buffer | null }) => field.buffer() };

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
    if (!file)
      throw new MysqlCdcError('The server has no binary log (log_bin is off): change data capture needs it');
    const [gtidRows] = await conn.query('SELECT BINLOG_GTID_POS(?, ?) AS gtid', [file, offset]);
    const gtid = String((gtidRows as { gtid: string | null }[])[0]?.gtid ?? '');
    return { file, offset, gtid };
  }
  await conn.query('FLUSH TABLES WITH READ LOCK').catch((e: unknown) => {
    throw new MysqlCdcError(
      `The snapshot needs a brief global read lock to read its binary log position, which the server refused (grant RELOAD): ${String((e as Error).message)}`,
    );
  });
  try {
    await conn.query('START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY');
    // MySQL 8.4 renamed SHOW MASTER STATUS; 8.0 knows only the old name.
    const [rows] = await conn.query('SHOW BINARY LOG STATUS').catch(() => conn.query('SHOW MASTER STATUS'));
    const row = (rows as { File?: string; Position?: number }[])[0];
    if (!row?.File)
      throw new MysqlCdcError('The server has no binary log (log_bin is off): change data capture needs it');
    return { file: row.File, offset: Number(row.Position), gtid: '' };
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
      const emit = async (raw: Record<string, Buffer | null>) => {
        const row: Record<string, unknown> = {};
        for (const col of shape.columns) row[col.name] = snapshotValue(col, raw[col.name] ?? null);
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
      const columns = shape.columns.map((c) => quoteId(c.name)).join(', ');
      let rows = 0;
      if (shape.primaryKey.length > 0) {
        const pk = shape.primaryKey.map(quoteId).join(', ');
        const keyColumns = shape.primaryKey.map((k) => shape.columns.find((c) => c.name === k)!);
        let after: (Buffer | string)[] | null = null;
        for (;;) {
          signal.throwIfAborted();
          const where = after ? `WHERE (${pk}) > (${after.map(() => '?').join(', ')})` : '';
          const [page] = await conn.query({
            sql: `SELECT ${columns} FROM ${qualified(shape)} ${where} ORDER BY ${pk} LIMIT ${chunk}`,
            values: after ?? [],
            ...RAW,
          });
          const list = page as Record<string, Buffer | null>[];
          for (const raw of list) await emit(raw);
          rows += list.length;
          if (list.length < chunk) break;
          const last = list[list.length - 1]!;
          // The last key as the next page's bound: bytes for binary strings and BIT (a hex
          // literal), text for the rest (a string literal, which the server converts to the column's type).
          after = keyColumns.map((c) => {
            const v = last[c.name] as Buffer;
            return c.dataType === 'bit' || (c.charset === null && /binary|blob/.test(c.dataType))
              ? v
              : v.toString('utf8');
          });
        }
      } else {
        // No key to page by: one streaming read, its pace set by onEvent.
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
          await emit(raw as Record<string, Buffer | null>);
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
