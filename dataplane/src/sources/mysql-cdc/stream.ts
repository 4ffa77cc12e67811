import type mysql from 'mysql2/promise';
import { oneLine } from '@sluice/shared/util';
import { changeEvent, truncateEvent, type ChangeEvent, type ChangeOp } from '../../contracts.js';
import {
  EVENT,
  HEADER_LENGTH,
  parseHeader,
  parseMariadbGtid,
  parseMysqlGtid,
  parseQuery,
  parseRotate,
  parseRowsHead,
  parseTableMap,
  parseXaPrepare,
  rowsKind,
  type EventHeader,
  type TableMapEvent,
} from './binlog-events.js';
import { startBinlogDump, type BinlogDump } from './binlog-dump.js';
import type { TableColumn, TableShape } from './columns.js';
import { capturedTable, type CapturedTable } from './recorded-tables.js';
import { describeMap } from './table-map-metadata.js';
import { MysqlCdcError, type MysqlCdcOptions } from './contract.js';
import { unexplainedChanges } from './catalog-check.js';
import { ddlStatement } from './ddl-statement.js';
import { columnsOfMap } from './shape-check.js';
import { isMysqlGtidSet } from './gtid-set.js';
import {
  advanceGtid,
  advanceMysqlGtid,
  formatPosition,
  positionOf,
  type BinlogPosition,
} from './position.js';
import { positionTopic } from './position-store.js';
import { readRowImage } from './row-values.js';
import { truncatedTable } from './truncate-statement.js';
import { PreparedXa, xaOutcome, type XaOutcome } from './xa-transactions.js';

// The stream of the capture: the binary log read from the checkpointed
// position (COM_BINLOG_DUMP; on MariaDB from the GTID position), the row
// events of the captured tables turned into change events, and the position
// after a transaction's commit recorded once `flush` published its events
// (the broker acknowledged them). While more of the log is already
// received, commits are recorded together (at most `commitsPerFlush`), so a
// busy server costs one publish round trip per batch of transactions. The
// socket is paused while too many events wait (back-pressure).

/** Queued events above which the socket is paused, and below which it resumes. */
const HIGH_WATER = 2000;
const LOW_WATER = 200;
/** The server is asked for a heartbeat after 5 s without events. */
const HEARTBEAT_S = 5;
/**
 * Silence (no event, no heartbeat, the socket not paused) after which the
 * connection is taken as lost: a server host that restarted or a network
 * path that dropped it sends no reset to a reader that never writes.
 */
const SILENCE_MS = 6 * HEARTBEAT_S * 1000;
/** Why changes cannot be matched to their columns, and what to do (the two errors of tableMap). */
const NO_NAMES = 'without the column names in the log (binlog_row_metadata=FULL)';
const REMEDY = 'set binlog_row_metadata=FULL and take a new snapshot (a snapshot backfill, POST /backfills/)';

interface Captured extends CapturedTable {
  datamodelId: string;
}

interface OpenTransaction {
  /** What events of the transaction carry as `source.position`. */
  position: string;
  /** The GTID position once it commits. */
  gtidAfter: string;
  tsMs: number;
  events: number;
  /** The position before its first event. */
  start: BinlogPosition;
  /** An XA transaction's rows, held until its outcome (xa-transactions.ts). */
  xa?: ChangeEvent[];
}

export interface BinlogStreamParts {
  /** Reads a table's definition from the catalog (columns of a table map); null when there is no such table. */
  readShape: (schema: string, table: string) => Promise<TableShape | null>;
  /** The server's collations by id → character set (read once, when a map first needs them). */
  collations: () => Promise<ReadonlyMap<number, string>>;
  /** The connection the dump runs on (nothing else runs there). */
  dumpConnection: mysql.Connection;
  serverId: number;
  /** The server as messages name it. */
  where: string;
}

export class BinlogStream {
  private readonly tables: Map<string, Captured>;
  /** Table maps of the log by table id; null for a table not captured. */
  private readonly maps = new Map<
    number,
    { map: TableMapEvent; captured: Captured; columns: TableColumn[]; keyColumns: string[] } | null
  >();
  private position: BinlogPosition;
  private transaction: OpenTransaction | null = null;
  private readonly preparedXa = new PreparedXa();
  /** The position after the last commit read but not yet recorded. */
  private committed: BinlogPosition | null = null;
  private commitsWaiting = 0;
  private eventsWaiting = 0;
  /** The last position recorded. */
  recorded: BinlogPosition;

  /** Where the stream reads now (monitoring: its lag behind the server). */
  get readPosition(): BinlogPosition {
    return { ...this.position };
  }

  constructor(
    private readonly parts: BinlogStreamParts,
    private readonly options: MysqlCdcOptions,
    tables: ReadonlyMap<string, Captured>,
    start: BinlogPosition,
    private readonly signal: AbortSignal,
  ) {
    this.tables = new Map(tables);
    this.position = { ...start };
    this.recorded = positionOf(start);
  }

  async run(): Promise<void> {
    const { dumpConnection: conn } = this.parts;
    const [rows] = await conn.query('SELECT @@global.binlog_checksum AS checksum');
    const checksum =
      String((rows as { checksum: string | null }[])[0]?.checksum ?? 'NONE').toUpperCase() !== 'NONE';
    if (checksum) await conn.query('SET @master_binlog_checksum = @@global.binlog_checksum');
    // A heartbeat every 5 s while the log is idle: a dead connection is noticed, and an idle position is recorded.
    await conn.query(`SET @master_heartbeat_period = ${HEARTBEAT_S * 1_000_000_000}`);
    if (this.options.engine === 'MariaDB') {
      // GTID events instead of BEGIN (capability 4: MARIA_SLAVE_CAPABILITY_GTID), and start at the GTID position.
      await conn.query('SET @mariadb_slave_capability = 4');
      if (this.position.gtid !== '') {
        await conn.query('SET @slave_connect_state = ?', [this.position.gtid]);
        await conn.query('SET @slave_gtid_strict_mode = 0');
        await conn.query('SET @slave_gtid_ignore_duplicates = 0');
      }
    }
    const dump = startBinlogDump(conn, {
      serverId: this.parts.serverId,
      file: this.position.file,
      position: this.position.offset,
      checksum,
      // MySQL with GTIDs: every transaction not in the executed set, wherever it is.
      ...(this.options.engine !== 'MariaDB' && isMysqlGtidSet(this.position.gtid)
        ? { mysqlGtidSet: this.position.gtid }
        : {}),
    });
    return this.consume(dump);
  }

  private consume(dump: BinlogDump): Promise<void> {
    const queue: Buffer[] = [];
    let draining: Promise<void> | null = null;
    let halted = false;
    let paused = false;
    let heard = Date.now();
    return new Promise<void>((resolve, reject) => {
      const watchdog = setInterval(() => {
        if (paused || Date.now() - heard < SILENCE_MS) return;
        fail(
          new MysqlCdcError(
            `${this.options.engine} at ${this.parts.where} sent nothing for ${SILENCE_MS / 1000} s, though asked for a heartbeat every ${HEARTBEAT_S} s: the connection is taken as lost (the server hangs or restarted, or the network dropped the connection)`,
          ),
        );
      }, 1000);
      watchdog.unref();
      const fail = (error: unknown) => {
        if (halted) return;
        halted = true;
        clearInterval(watchdog);
        reject(error instanceof Error ? error : new Error(String(error)));
      };
      const drain = async () => {
        try {
          while (queue.length > 0 && !halted) {
            await this.handle(queue.shift() as Buffer, queue.length === 0);
            if (paused && queue.length <= LOW_WATER) {
              paused = false;
              heard = Date.now();
              dump.resume();
            }
          }
        } catch (error) {
          fail(error);
        } finally {
          draining = null;
        }
      };
      dump.on('event', (event: Buffer) => {
        if (halted) return;
        heard = Date.now();
        queue.push(event);
        if (!paused && queue.length >= HIGH_WATER) {
          paused = true;
          dump.pause();
        }
        if (!draining) draining = drain();
      });
      dump.on('error', (error: Error) => fail(this.describeDumpError(error)));
      dump.on('end', () =>
        fail(new MysqlCdcError(`${this.options.engine} at ${this.parts.where} ended the binary log stream`)),
      );
      this.parts.dumpConnection.on('error', (error: Error) => fail(this.describeDumpError(error)));
      const stop = async () => {
        // Stopping: finish what was received (a commit may be waiting there) and record it.
        const wasHalted = halted;
        halted = true;
        clearInterval(watchdog);
        dump.pause();
        await draining;
        if (!wasHalted) await this.checkpoint().catch(() => undefined);
        resolve();
      };
      if (this.signal.aborted) void stop();
      else this.signal.addEventListener('abort', () => void stop(), { once: true });
    });
  }

  private describeDumpError(error: Error): Error {
    const e = error as Error & { errno?: number; code?: string };
    const from =
      this.recorded.gtid !== ''
        ? `GTID position ${this.recorded.gtid}`
        : `${this.recorded.file}:${this.recorded.offset}`;
    // 1236: the server cannot serve the position asked for (purged, or never there).
    if (e.errno === 1236) {
      return new MysqlCdcError(
        `${this.options.engine} at ${this.parts.where} no longer has the binary log this connector resumes from (${from}): ` +
          `the logs were purged or the server does not hold that position (${e.message.replace(/\s+/g, ' ').trim()}). ` +
          'Changes since then cannot be captured: take a new snapshot, by a snapshot backfill of all its data models ' +
          'into all their targets (POST /backfills/; the worker then resumes where the backfill began), ' +
          `or by deleting the recorded position (the topic ${positionTopic(this.options.connectorId)} of the platform broker; ` +
          'the next start snapshots every table again), and keep binary logs longer than the connector may be stopped ' +
          '(binlog_expire_logs_seconds)',
      );
    }
    return error;
  }

  /** Publishes what is buffered and records the position after the commits it completes. */
  private async checkpoint(): Promise<void> {
    if (this.committed === null) return;
    // Not past the rows of an undecided XA transaction: a restart must read them again.
    const at = this.preparedXa.holdAt() ?? { ...this.committed, tables: this.capturedTables() };
    if (this.eventsWaiting > 0) await this.options.flush();
    await this.options.savePosition(at);
    this.recorded = positionOf(at);
    this.committed = null;
    this.commitsWaiting = 0;
    this.eventsWaiting = 0;
    this.options.onCheckpoint?.(at);
  }

  /** The captured tables' definitions now, as a position recorded now carries them. */
  private capturedTables(): Record<string, CapturedTable> {
    const out: Record<string, CapturedTable> = {};
    for (const [entry, t] of this.tables) out[entry] = capturedTable(t);
    return out;
  }

  private async handle(event: Buffer, queueEmpty: boolean): Promise<void> {
    const header = parseHeader(event);
    const body = event.subarray(HEADER_LENGTH);
    const before = { ...this.position };
    // Events the server makes up (a fake ROTATE naming the file, a heartbeat) carry no position.
    const advance = () => {
      if (header.nextPosition > 0) this.position.offset = header.nextPosition;
    };
    switch (header.type) {
      case EVENT.ROTATE: {
        const r = parseRotate(body);
        this.position.file = r.file;
        this.position.offset = r.position;
        // A real rotation (logged at the end of the old file, after its last commit): the new file's
        // start is recorded at the next heartbeat, so an idle capture does not keep needing a log the
        // server may purge (the server's fake ROTATE at the dump's start carries no position).
        if (header.nextPosition > 0 && this.transaction === null) {
          this.committed = { ...this.position };
        }
        return;
      }
      case EVENT.HEARTBEAT:
        // Idle with everything received handled: the commits read so far are recorded.
        if (this.transaction === null && queueEmpty) await this.checkpoint();
        return;
      case EVENT.MARIADB_GTID: {
        advance();
        const g = parseMariadbGtid(body);
        const gtidAfter = advanceGtid(this.position.gtid, g.domain, header.serverId, g.sequence);
        this.transaction = {
          position: `${g.domain}-${header.serverId}-${g.sequence}`,
          gtidAfter,
          tsMs: header.timestamp * 1000,
          events: 0,
          start: before,
          ...(g.preparedXa ? { xa: [] } : {}),
        };
        return;
      }
      case EVENT.MYSQL_GTID:
        advance();
        // Kept only from a position that has the whole set (the snapshot read gtid_executed).
        if (isMysqlGtidSet(this.position.gtid)) {
          const g = parseMysqlGtid(body);
          this.transaction = {
            position: `${g.uuid}:${g.gno}`,
            gtidAfter: advanceMysqlGtid(this.position.gtid, g.uuid, g.gno),
            tsMs: header.timestamp * 1000,
            events: 0,
            start: before,
          };
        }
        return;
      case EVENT.MYSQL_GTID_TAGGED:
        advance();
        if (isMysqlGtidSet(this.position.gtid)) {
          this.options.log?.(
            'warn',
            'the server writes tagged GTIDs, which Sluice does not keep: the position is file and offset from here on',
          );
          this.position.gtid = '';
        }
        return;
      case EVENT.QUERY:
        advance();
        return this.query(header, body, queueEmpty, before);
      case EVENT.XA_PREPARE:
        advance();
        return this.xaPrepare(body, queueEmpty);
      case EVENT.XID:
        advance();
        return this.commit(queueEmpty);
      case EVENT.TABLE_MAP:
        advance();
        return this.tableMap(parseTableMap(body));
      case EVENT.MYSQL_TRANSACTION_PAYLOAD:
      case EVENT.MARIADB_QUERY_COMPRESSED:
        throw new MysqlCdcError(
          `${this.options.engine} at ${this.parts.where} writes a compressed binary log (binlog_transaction_compression / log_bin_compress), which this version of Sluice does not read: turn it off`,
        );
      default:
        advance();
        if (
          header.type >= EVENT.MARIADB_WRITE_ROWS_COMPRESSED_V1 &&
          header.type <= EVENT.MARIADB_DELETE_ROWS_COMPRESSED_V1 + 3
        ) {
          throw new MysqlCdcError(
            `${this.options.engine} at ${this.parts.where} writes compressed row events (log_bin_compress), which this version of Sluice does not read: turn it off`,
          );
        }
        if (rowsKind(header.type)) return this.rows(header.type, body);
        return;
    }
  }

  /** The end of an XA transaction's first part: its rows wait for XA COMMIT (or are committed here, one phase). */
  private async xaPrepare(body: Buffer, queueEmpty: boolean): Promise<void> {
    const { onePhase, xid } = parseXaPrepare(body);
    const t = this.transaction;
    if (t?.xa) {
      if (onePhase) await this.publishHeld(t, t.xa);
      // No DDL can fall inside an XA transaction: the definitions now are those at its start.
      else this.preparedXa.prepare(xid, { ...t.start, tables: this.capturedTables() }, t.xa);
      t.xa = undefined;
    }
    return this.commit(queueEmpty);
  }

  /** XA COMMIT or XA ROLLBACK of a prepared part, in a transaction of its own: its rows published or dropped. */
  private async xaDecided(xa: XaOutcome, queueEmpty: boolean): Promise<void> {
    const t = this.transaction;
    if (t?.xa) {
      // The group's own rows, read since XA START: a one-phase commit, or a rollback before any PREPARE.
      if (xa.outcome === 'commit') await this.publishHeld(t, t.xa);
    } else {
      const held = this.preparedXa.decide(xa.xid);
      if (held === undefined) {
        this.options.log?.(
          'warn',
          `XA ${xa.outcome.toUpperCase()} of ${xa.xid}, whose prepared part lies before the position this capture started from: its rows are not carried`,
        );
      } else if (xa.outcome === 'commit' && t) await this.publishHeld(t, held);
    }
    if (t) t.xa = undefined;
    return this.commit(queueEmpty);
  }

  /** An XA transaction's held rows, published as the changes of the transaction `t` that commits them. */
  private async publishHeld(t: OpenTransaction, held: ChangeEvent[]): Promise<void> {
    for (const e of held) {
      await this.options.onEvent({ ...e, source: { ...e.source, position: t.position, ts_ms: t.tsMs } });
      t.events += 1;
    }
  }

  private begin(header: EventHeader, start: BinlogPosition): void {
    this.transaction = {
      position: `${this.position.file}:${this.position.offset}`,
      gtidAfter: this.position.gtid,
      tsMs: header.timestamp * 1000,
      events: 0,
      start,
    };
  }

  private async commit(queueEmpty: boolean): Promise<void> {
    const t = this.transaction;
    this.transaction = null;
    if (t) {
      this.position.gtid = t.gtidAfter;
      this.options.onTransaction?.(t.tsMs);
    }
    this.committed = { ...this.position };
    this.commitsWaiting += 1;
    this.eventsWaiting += t?.events ?? 0;
    // A transaction of other tables alone is recorded at the next heartbeat or batch, not one record each.
    const batchFull = this.commitsWaiting >= (this.options.commitsPerFlush ?? 200);
    if (batchFull || (queueEmpty && this.eventsWaiting > 0)) await this.checkpoint();
  }

  private async query(
    header: EventHeader,
    body: Buffer,
    queueEmpty: boolean,
    start: BinlogPosition,
  ): Promise<void> {
    const q = parseQuery(body);
    const sql = q.query.trim();
    if (/^BEGIN$/i.test(sql) || /^XA START/i.test(sql)) {
      // MariaDB's GTID event already began it.
      if (!this.transaction) this.begin(header, start);
      if (/^XA START/i.test(sql)) this.transaction!.xa ??= [];
      return;
    }
    const xa = xaOutcome(sql);
    if (xa) return this.xaDecided(xa, queueEmpty);
    if (/^(COMMIT|ROLLBACK)$/i.test(sql) || /^XA (END|PREPARE|COMMIT)/i.test(sql)) {
      if (/^XA (END|PREPARE)/i.test(sql)) return;
      return this.commit(queueEmpty);
    }
    // A statement (DDL) is its own group: its table definitions are read anew at their next table map.
    const truncated = truncatedTable(sql, q.schema);
    if (truncated !== null) await this.truncate(header, truncated);
    this.noteDdl(q.schema, sql);
    if (this.transaction) return this.commit(queueEmpty);
    this.committed = { ...this.position };
    this.commitsWaiting += 1;
  }

  private noteDdl(schema: string, sql: string): void {
    const ddl = ddlStatement(sql, schema);
    if (!ddl) return;
    for (const entry of ddl.tables) {
      const captured = this.tables.get(entry);
      if (!captured) continue;
      // Statements read one after another before the next map are checked against the catalog together;
      // a table dropped, made anew or renamed onto the name has no earlier definition to hold it against.
      const statements = captured.shape ? sql : `${captured.ddl ?? ''}; ${sql}`;
      if (captured.shape) captured.before = captured.shape;
      if (ddl.verb !== 'ALTER' && ddl.verb !== 'TRUNCATE') captured.before = undefined;
      captured.ddl = oneLine(statements, 4000);
      captured.shape = null;
      for (const [id, m] of this.maps) if (m?.captured === captured) this.maps.delete(id);
    }
  }

  /** A TRUNCATE of a captured table: one event, in the statement's own transaction (it commits right after). */
  private async truncate(header: EventHeader, entry: string): Promise<void> {
    const captured = this.tables.get(entry);
    if (!captured) return;
    const t = this.transaction;
    await this.options.onEvent(
      truncateEvent({
        connector_id: this.options.connectorId,
        datamodel_id: captured.datamodelId,
        entry,
        position: t?.position ?? formatPosition(this.position),
        tsMs: t?.tsMs ?? header.timestamp * 1000,
      }),
    );
    if (t) t.events += 1;
    else this.eventsWaiting += 1;
  }

  private async tableMap(map: TableMapEvent): Promise<void> {
    const known = this.maps.get(map.tableId);
    if (known && sameMap(known.map, map)) {
      known.map = map;
      return;
    }
    const entry = `${map.schema}.${map.table}`;
    const captured = this.tables.get(entry);
    if (!captured) {
      this.maps.set(map.tableId, null);
      return;
    }
    const read = async () => {
      const shape = await this.parts.readShape(map.schema, map.table);
      if (!shape) {
        throw new MysqlCdcError(
          `The binary log holds changes of ${entry}, which ${this.options.engine} at ${this.parts.where} no longer shows to this user (dropped, or its privileges revoked)`,
        );
      }
      captured.shape = shape;
      return shape;
    };
    // With the full metadata the map describes its own rows (table-map-metadata.ts).
    const description = describeMap(map, this.options.engine);
    const described = description && { description, charsets: await this.parts.collations() };
    if (!captured.shape && !described) {
      const now = await read();
      const unexplained = captured.before ? unexplainedChanges(captured.before, now, captured.ddl ?? '') : [];
      if (unexplained.length > 0) {
        throw new MysqlCdcError(
          `The definition of ${entry} in the catalog differs from the one before \`${oneLine(captured.ddl, 300)}\`, which this capture read, ` +
            `also in columns that statement does not name (${unexplained.join(', ')}): the table was altered again after it, ` +
            `and ${NO_NAMES} the changes between the statements cannot be matched to their columns; ${REMEDY}`,
        );
      }
    }
    let columns = columnsOfMap(map, captured.shape ?? (await read()), described ?? undefined);
    // The definition known may be older than the log (altered since it was read): read it again once.
    if (typeof columns === 'string') columns = columnsOfMap(map, await read(), described ?? undefined);
    if (typeof columns === 'string') {
      const after = captured.ddl
        ? `after \`${oneLine(captured.ddl, 300)}\`, which this capture read, `
        : 'before a DDL statement further on in the log, ';
      throw new MysqlCdcError(
        `The binary log's rows of ${entry} ${after}do not match the table's definition (${columns}): ` +
          `the table was altered again since these changes were written, and ${NO_NAMES} they cannot be matched to their columns; ${REMEDY}`,
      );
    }
    captured.before = undefined;
    this.maps.set(map.tableId, { map, captured, ...columns });
  }

  private async rows(type: number, body: Buffer): Promise<void> {
    const head = parseRowsHead(type, body);
    const known = this.maps.get(head.tableId);
    if (!known) return;
    const { map, captured, columns, keyColumns } = known;
    const entry = `${map.schema}.${map.table}`;
    const t: OpenTransaction = this.transaction ?? {
      position: formatPosition(this.position),
      gtidAfter: this.position.gtid,
      tsMs: Date.now(),
      events: 0,
      start: this.position,
    };
    const r = head.reader;
    const op: ChangeOp = head.kind === 'write' ? 'c' : head.kind === 'update' ? 'u' : 'd';
    while (r.pos < r.buf.length) {
      const first = readRowImage(r, head.present, map.types, map.meta, columns);
      const second =
        head.kind === 'update'
          ? readRowImage(r, head.presentAfter, map.types, map.meta, columns, head.partial ? first : undefined)
          : null;
      const before = head.kind === 'write' ? null : first;
      const after = head.kind === 'write' ? first : second;
      const event = changeEvent({
        op,
        before,
        after,
        keyColumns,
        connector_id: this.options.connectorId,
        datamodel_id: captured.datamodelId,
        entry,
        position: t.position,
        snapshot: false,
        tsMs: t.tsMs,
      });
      if (t.xa) {
        t.xa.push(event);
        continue;
      }
      await this.options.onEvent(event);
      t.events += 1;
    }
    if (!this.transaction) this.eventsWaiting += t.events;
  }
}

function sameMap(a: TableMapEvent, b: TableMapEvent): boolean {
  return (
    a.schema === b.schema &&
    a.table === b.table &&
    a.types.length === b.types.length &&
    a.types.every((t, i) => t === b.types[i]) &&
    (a.names ?? []).join('\n') === (b.names ?? []).join('\n')
  );
}
