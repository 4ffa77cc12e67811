import type pg from 'pg';
import { changeEvent, truncateEvent, type ChangeOp } from '../../contracts.js';
import { quoteIdent, quoteLiteral } from '../../systems/postgres/connection.js';
import { describePgFailure } from '../../systems/postgres/errors.js';
import {
  formatLsn,
  parseFrame,
  parsePgoutput,
  standbyStatus,
  tupleToRow,
  type PgoutputMessage,
  type RelationColumn,
} from '../pgoutput.js';
import { PostgresCdcError, type PostgresCdcOptions, type PostgresCdcTable } from './contract.js';
import { primaryKey } from './tables.js';

// The stream of the capture: START_REPLICATION on the slot, pgoutput decoded,
// each change handed to `onEvent`, and a transaction acknowledged to the
// server (standby status update) at its commit, once `flush` published its
// events; the socket paused while too much is queued.

interface Relation {
  entry: string;
  datamodelId: string | null;
  columns: RelationColumn[];
  keyColumns: string[];
}

interface CopyConnection {
  on(event: 'copyData', listener: (msg: { chunk: Buffer }) => void): void;
  sendCopyFromChunk(chunk: Buffer): void;
  endCopyFrom(): void;
  stream: { pause(): void; resume(): void };
}

/** Queued CopyData chunks above which the socket is paused (back-pressure), and below which it resumes. */
const HIGH_WATER = 1000;
const LOW_WATER = 100;

/** The replication session of a capture, from the slot's position on; `acked` is what the server was last told. */
export class ReplicationStream {
  acked: bigint;
  private readonly relations = new Map<number, Relation>();
  private commitMs = 0;
  private inTransaction = false;
  /** The end of the last commit handled but not yet acknowledged (its events may be buffered). */
  private committed: bigint | null = null;
  private commitsWaiting = 0;

  constructor(
    private readonly admin: pg.Client,
    private readonly replication: pg.Client,
    private readonly options: PostgresCdcOptions,
    private readonly byEntry: Map<string, PostgresCdcTable>,
    private readonly slot: string,
    private readonly publication: string,
    acked: bigint,
    private readonly signal: AbortSignal,
    /** The server, as messages name it (`host:port`). */
    private readonly where: string,
  ) {
    this.acked = acked;
  }

  async stream(): Promise<void> {
    const connection = (this.replication as unknown as { connection: CopyConnection }).connection;
    const queue: Buffer[] = [];
    let draining: Promise<void> | null = null;
    // After a failed publication nothing more is handled: a later commit
    // must not acknowledge past the event that was not published.
    let halted = false;
    let paused = false;
    let fail: (error: Error) => void = () => undefined;
    const failed = new Promise<never>((_, reject) => (fail = reject));
    failed.catch(() => undefined);

    const drain = async () => {
      try {
        while (queue.length > 0) {
          await this.handle(queue.shift() as Buffer, connection, queue.length === 0);
          if (paused && queue.length <= LOW_WATER) {
            paused = false;
            connection.stream.resume();
          }
        }
      } catch (error) {
        halted = true;
        fail(error instanceof Error ? error : new Error(String(error)));
      } finally {
        draining = null;
      }
    };
    connection.on('copyData', ({ chunk }) => {
      if (halted) return;
      // A copy: `chunk` is a view into pg-protocol's parser buffer, which the
      // next socket read overwrites in place (the unparsed tail is moved to
      // its start), so a chunk handled after that would hold other bytes.
      queue.push(Buffer.from(chunk));
      if (!paused && queue.length >= HIGH_WATER) {
        paused = true;
        connection.stream.pause();
      }
      if (!draining) draining = drain();
    });

    const started = this.replication.query(
      `START_REPLICATION SLOT ${this.slot} LOGICAL 0/0 (proto_version '1', publication_names ${quoteLiteral(
        quoteIdent(this.publication),
      )})`,
    );
    started.catch(() => undefined);
    const aborted = new Promise<void>((resolve) => {
      if (this.signal.aborted) resolve();
      this.signal.addEventListener('abort', () => resolve(), { once: true });
    });
    try {
      await Promise.race([
        aborted,
        failed,
        started.then(() => Promise.reject(new Error('The server ended replication'))),
      ]);
    } catch (error) {
      throw new PostgresCdcError(
        `Replication from slot ${this.slot} stopped: ${describePgFailure(error, this.where)}`,
      );
    }
    // Stopping: the last acknowledgement, then end the copy so the server records it before the session ends.
    // No more input; finish what was received (a transaction's commit may be
    // waiting there) and acknowledge it before the session ends.
    connection.stream.pause();
    await draining;
    if (!halted) await this.flushCommitted(connection).catch(() => undefined);
    // The rest is not handled (it was not acknowledged: a restart gets it
    // again), but is read, so the server's end of the copy can arrive.
    halted = true;
    connection.stream.resume();
    connection.sendCopyFromChunk(standbyStatus(this.acked));
    connection.endCopyFrom();
    await Promise.race([started.catch(() => undefined), new Promise((r) => setTimeout(r, 5000).unref())]);
  }

  async close(): Promise<void> {
    await this.replication.end().catch(() => undefined);
    await this.admin.end().catch(() => undefined);
  }

  private acknowledge(lsn: bigint, connection: CopyConnection): void {
    this.acked = lsn;
    connection.sendCopyFromChunk(standbyStatus(lsn));
    this.options.onAcknowledge?.(formatLsn(lsn));
  }

  private async handle(chunk: Buffer, connection: CopyConnection, queueEmpty: boolean): Promise<void> {
    const frame = parseFrame(chunk);
    if (frame.kind === 'keepalive') {
      // Idle, with everything received handled: nothing before walEnd is
      // still owed, so the slot may move on (it frees WAL of other tables).
      if (!this.inTransaction && queueEmpty) {
        await this.flushCommitted(connection);
        if (frame.walEnd > this.acked) this.acknowledge(frame.walEnd, connection);
      } else if (frame.replyRequested) connection.sendCopyFromChunk(standbyStatus(this.acked));
      return;
    }
    if (frame.kind !== 'xlog') return;
    await this.apply(parsePgoutput(frame.payload), formatLsn(frame.start), connection, queueEmpty);
  }

  /** Publishes what is buffered, then acknowledges the commits it completes. */
  private async flushCommitted(connection: CopyConnection): Promise<void> {
    if (this.committed === null) return;
    await this.options.flush?.();
    this.acknowledge(this.committed, connection);
    this.committed = null;
    this.commitsWaiting = 0;
  }

  private async apply(
    msg: PgoutputMessage,
    position: string,
    connection: CopyConnection,
    queueEmpty: boolean,
  ): Promise<void> {
    switch (msg.tag) {
      case 'begin':
        this.inTransaction = true;
        this.commitMs = msg.commitMs;
        return;
      case 'commit':
        // Every event of the transaction was handed over; it is acknowledged
        // once published — now, or with the next commits while more input waits.
        this.inTransaction = false;
        this.committed = msg.endLsn;
        this.commitsWaiting += 1;
        if (queueEmpty || this.commitsWaiting >= (this.options.commitsPerFlush ?? 100))
          await this.flushCommitted(connection);
        return;
      case 'relation': {
        const entry = `${msg.schema}.${msg.table}`;
        const key =
          (await primaryKey(this.admin, msg.relid)) ??
          msg.columns.filter((c) => c.identity).map((c) => c.name);
        this.relations.set(msg.relid, {
          entry,
          datamodelId: this.byEntry.get(entry)?.datamodelId ?? null,
          columns: msg.columns,
          keyColumns: key,
        });
        return;
      }
      case 'insert':
      case 'update':
      case 'delete': {
        const rel = this.relations.get(msg.relid);
        if (!rel?.datamodelId) return;
        const after = msg.tag === 'delete' ? null : tupleToRow(rel.columns, msg.after);
        const before =
          msg.tag === 'insert' || !msg.before
            ? null
            : keyOnly(rel, tupleToRow(rel.columns, msg.before), msg.beforeIsKeyOnly);
        const op: ChangeOp = msg.tag === 'insert' ? 'c' : msg.tag === 'update' ? 'u' : 'd';
        await this.options.onEvent(
          changeEvent({
            op,
            before,
            after,
            keyColumns: rel.keyColumns,
            connector_id: this.options.connectorId,
            datamodel_id: rel.datamodelId,
            entry: rel.entry,
            position,
            snapshot: false,
            tsMs: this.commitMs,
          }),
        );
        return;
      }
      case 'truncate':
        // One event per captured table of the statement (a CASCADE lists the tables it reached too).
        for (const relid of msg.relids) {
          const rel = this.relations.get(relid);
          if (!rel?.datamodelId) continue;
          await this.options.onEvent(
            truncateEvent({
              connector_id: this.options.connectorId,
              datamodel_id: rel.datamodelId,
              entry: rel.entry,
              position,
              tsMs: this.commitMs,
              truncate: { cascade: msg.cascade, restart_identity: msg.restartIdentity },
            }),
          );
        }
        return;
      default:
        return;
    }
  }
}

/** With the default replica identity, the old row of a delete has only its key columns (the others are null). */
function keyOnly(rel: Relation, row: Record<string, unknown>, isKeyOnly: boolean): Record<string, unknown> {
  if (!isKeyOnly) return row;
  const identity = new Set(rel.columns.filter((c) => c.identity).map((c) => c.name));
  return Object.fromEntries(Object.entries(row).filter(([k]) => identity.has(k)));
}
