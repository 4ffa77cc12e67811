import pg from 'pg';
import { cdcNames, type OutboundPolicy } from '@sluice/shared';
import { changeEvent, type ChangeEvent, type ChangeOp } from '../contracts.js';
import {
  connectClient,
  pgConfig,
  pgWhere,
  quoteIdent,
  quoteLiteral,
  type PostgresSettings,
} from '../systems/postgres/connection.js';
import { describePgFailure } from '../systems/postgres/errors.js';
import {
  formatLsn,
  parseFrame,
  parseLsn,
  parsePgoutput,
  standbyStatus,
  tupleToRow,
  decodeValue,
  type PgoutputMessage,
  type RelationColumn,
} from './pgoutput.js';

// The POSTGRES_SOURCE capture: logical replication with pgoutput, a
// publication and a slot per connector. The first start creates both, the
// slot with an exported snapshot; each whitelisted table is read (op `r`) in a
// REPEATABLE READ transaction on that snapshot, and streaming then starts at
// the slot's consistent point, so no change is missed or doubled between the
// snapshot and the stream. A change is acknowledged to the server (standby
// status update) at its transaction's commit, only after `onEvent` resolved
// for every event of the transaction and `flush` resolved after them: the
// slot's confirmed position is what a restart resumes from. While more of the
// stream is already received, commits are acknowledged together at the next
// flush, so a busy source costs one publish round trip per batch of
// transactions rather than one per event. docs/data-plane-postgres.md.

export interface PostgresSourceSettings extends PostgresSettings {
  slot_name?: string;
  publication_name?: string;
  plugin_name?: string;
}

/** A whitelisted table (`schema.table`) and the data model its events belong to. */
export interface PostgresCdcTable {
  entry: string;
  datamodelId: string;
}

export interface PostgresCdcOptions {
  connectorId: string;
  tables: readonly PostgresCdcTable[];
  /**
   * Takes one event (it may buffer it); the capture acknowledges nothing
   * before it resolved and `flush` resolved after it.
   */
  onEvent: (event: ChangeEvent) => Promise<void>;
  /** Publishes what `onEvent` buffered; called before every acknowledgement and after each snapshot table. */
  flush?: () => Promise<void>;
  /** Committed transactions acknowledged together at most (default 100), while more input waits. */
  commitsPerFlush?: number;
  policy?: OutboundPolicy;
  /** Rows per FETCH of the snapshot cursor; default 1,000. */
  snapshotFetchRows?: number;
  log?: (level: 'info' | 'warn', msg: string) => void;
  /** Told each LSN acknowledged to the server (metrics: the source's lag). */
  onAcknowledge?: (lsn: string) => void;
}

export interface PostgresCdcCapture {
  /** Settles when the capture stops: resolves after an abort, rejects with the reason of a failure. */
  done: Promise<void>;
  /** The last LSN acknowledged to the server (`X/Y`). */
  acknowledgedLsn(): string;
}

export class PostgresCdcError extends Error {
  override readonly name = 'PostgresCdcError';
}

const SLOT_PATTERN = /^[a-z0-9_]{1,63}$/;
/** The publication comment Sluice keeps: who created it, and whether the initial snapshot completed. */
const MARK_CREATED = 'sluice: created for the connector';
const MARK_SNAPSHOT_DONE = 'initial snapshot complete';

export function parseEntry(entry: string): { schema: string; table: string } {
  const dot = entry.indexOf('.');
  return dot < 0
    ? { schema: 'public', table: entry }
    : { schema: entry.slice(0, dot), table: entry.slice(dot + 1) };
}

export const qualifiedEntry = (e: { schema: string; table: string }) =>
  `${quoteIdent(e.schema)}.${quoteIdent(e.table)}`;

type Connect = (replication: boolean) => Promise<pg.Client>;

function connector(settings: PostgresSettings, policy: OutboundPolicy | undefined): Connect {
  return (replication) =>
    connectClient(settings, (tls) => {
      const config = pgConfig(settings, {
        ...(policy ? { policy } : {}),
        applicationName: 'sluice-postgres-cdc',
        ...(tls === undefined ? {} : { tls }),
      });
      // `replication` is a startup parameter node-postgres passes on (its types omit it).
      return new pg.Client(
        replication ? ({ ...config, replication: 'database' } as pg.ClientConfig) : config,
      );
    }).catch((error: unknown) => {
      throw new PostgresCdcError(describePgFailure(error, pgWhere(settings)));
    });
}

/** The primary-key columns of a table, in key order; null when it has none. */
export async function primaryKey(client: pg.Client, relation: string | number): Promise<string[] | null> {
  const { rows } = await client.query<{ name: string }>(
    `select a.attname::text as name
       from pg_index i join pg_attribute a on a.attrelid = i.indrelid and a.attnum = any(i.indkey)
      where i.indrelid = ${typeof relation === 'number' ? '$1::oid' : '$1::regclass'} and i.indisprimary
      order by array_position(i.indkey::int2[], a.attnum)`,
    [relation],
  );
  return rows.length ? rows.map((r) => r.name) : null;
}

interface PublicationState {
  /** Sluice may record the snapshot's completion on it (it owns it). */
  owned: boolean;
  comment: string | null;
}

async function ensurePublication(
  client: pg.Client,
  name: string,
  tables: readonly { schema: string; table: string }[],
  log: PostgresCdcOptions['log'],
): Promise<PublicationState> {
  for (const t of tables) {
    const { rows } = await client.query<{ ok: boolean }>('select to_regclass($1) is not null as ok', [
      qualifiedEntry(t),
    ]);
    if (!rows[0]?.ok)
      throw new PostgresCdcError(`Table ${t.schema}.${t.table} does not exist in the source database`);
  }
  const list = tables.map(qualifiedEntry).join(', ');
  const { rows } = await client.query<{ owned: boolean; comment: string | null }>(
    `select pubowner = (select oid from pg_roles where rolname = current_user) as owned,
            obj_description(oid, 'pg_publication') as comment
       from pg_publication where pubname = $1`,
    [name],
  );
  const existing = rows[0];
  if (!existing) {
    await client.query(`create publication ${quoteIdent(name)} for table ${list}`);
    await client.query(`comment on publication ${quoteIdent(name)} is ${quoteLiteral(MARK_CREATED)}`);
    return { owned: true, comment: MARK_CREATED };
  }
  const published = await client.query<{ schemaname: string; tablename: string }>(
    'select schemaname::text, tablename::text from pg_publication_tables where pubname = $1',
    [name],
  );
  const have = new Set(published.rows.map((r) => `${r.schemaname}\0${r.tablename}`));
  const differs = tables.length !== have.size || tables.some((t) => !have.has(`${t.schema}\0${t.table}`));
  if (differs && existing.owned) {
    // The whitelist changed: tables added now are streamed from here on (a backfill re-reads them).
    await client.query(`alter publication ${quoteIdent(name)} set table ${list}`);
  } else if (differs) {
    log?.('warn', `publication ${name} is not Sluice's and does not publish exactly the whitelisted tables`);
  }
  return { owned: existing.owned, comment: existing.comment };
}

/**
 * Starts the capture: publication and slot created when missing, then (in
 * `done`) the initial snapshot when the slot is new, and the stream. Resolves
 * once connected with the slot in hand.
 */
export async function startPostgresCdc(
  settings: PostgresSourceSettings,
  options: PostgresCdcOptions,
  signal: AbortSignal,
): Promise<PostgresCdcCapture> {
  if ((settings.plugin_name ?? 'pgoutput') !== 'pgoutput') {
    throw new PostgresCdcError(
      `The ${settings.plugin_name} plug-in is not supported by this version of Sluice: use pgoutput`,
    );
  }
  const { slot, publication } = cdcNames(options.connectorId, settings);
  if (!SLOT_PATTERN.test(slot)) throw new PostgresCdcError(`"${slot}" is not a valid replication slot name`);
  const tables = options.tables.map((t) => ({ ...t, ...parseEntry(t.entry) }));
  const byEntry = new Map(tables.map((t) => [`${t.schema}.${t.table}`, t]));
  const connect = connector(settings, options.policy);

  const admin = await connect(false);
  let replication: pg.Client | null = null;
  try {
    const pub = await ensurePublication(admin, publication, tables, options.log);
    const found = await admin.query<{ lsn: string; active: boolean }>(
      `select confirmed_flush_lsn::text as lsn, active from pg_replication_slots
        where slot_name = $1 and database = current_database()`,
      [slot],
    );
    let existing = found.rows[0];
    if (existing?.active) await waitForSlotRelease(admin, slot);
    // A slot whose snapshot never completed (a crash mid-snapshot) is made anew: the snapshot is redone.
    if (existing && pub.owned && !(pub.comment ?? '').includes(MARK_SNAPSHOT_DONE)) {
      await admin.query('select pg_drop_replication_slot($1)', [slot]);
      existing = undefined;
    }
    replication = await connect(true);
    let snapshot: { name: string; lsn: bigint } | null = null;
    let acked: bigint;
    if (existing) {
      acked = parseLsn(existing.lsn);
    } else {
      const created = await replication.query<{ consistent_point: string; snapshot_name: string }>(
        `CREATE_REPLICATION_SLOT ${slot} LOGICAL pgoutput EXPORT_SNAPSHOT`,
      );
      const row = created.rows[0] as { consistent_point: string; snapshot_name: string };
      snapshot = { name: row.snapshot_name, lsn: parseLsn(row.consistent_point) };
      acked = snapshot.lsn;
      options.log?.('info', `created replication slot ${slot} at ${row.consistent_point}`);
    }
    const run = new Capture(
      admin,
      replication,
      options,
      byEntry,
      slot,
      publication,
      acked,
      signal,
      pgWhere(settings),
    );
    const done = (async () => {
      if (snapshot) {
        await run.snapshot(snapshot.name, snapshot.lsn, tables);
        if (pub.owned) {
          await admin.query(
            `comment on publication ${quoteIdent(publication)} is ${quoteLiteral(`${MARK_CREATED}; ${MARK_SNAPSHOT_DONE}`)}`,
          );
        }
      }
      await run.stream();
    })().finally(() => run.close());
    return { done, acknowledgedLsn: () => formatLsn(run.acked) };
  } catch (error) {
    await replication?.end().catch(() => undefined);
    await admin.end().catch(() => undefined);
    if (error instanceof PostgresCdcError) throw error;
    throw new PostgresCdcError(
      `Starting the capture of ${settings.database} failed: ${describePgFailure(error, pgWhere(settings))}`,
    );
  }
}

/**
 * Waits (a few seconds at most) for the session that held the slot to end: a
 * worker restarted at once finds its predecessor's session still closing.
 * A slot still held after that is in use by another worker.
 */
async function waitForSlotRelease(client: pg.Client, slot: string): Promise<void> {
  for (let i = 0; i < 40; i++) {
    const { rows } = await client.query<{ active: boolean }>(
      'select active from pg_replication_slots where slot_name = $1',
      [slot],
    );
    if (!rows[0]?.active) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new PostgresCdcError(
    `Replication slot ${slot} is in use by another process (another worker of the connector?)`,
  );
}

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

class Capture {
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

  async snapshot(
    name: string,
    lsn: bigint,
    tables: readonly (PostgresCdcTable & { schema: string; table: string })[],
  ) {
    const fetchRows = this.options.snapshotFetchRows ?? 1000;
    const position = formatLsn(lsn);
    const types = { getTypeParser: (oid: number) => (text: string) => decodeValue(oid, text) };
    await this.admin.query('begin isolation level repeatable read, read only');
    try {
      await this.admin.query(`set transaction snapshot ${quoteLiteral(name)}`);
      for (const t of tables) {
        const from = qualifiedEntry(t);
        const key = (await primaryKey(this.admin, from)) ?? [];
        const ts = Date.now();
        await this.admin.query(`declare sluice_snapshot no scroll cursor for select * from ${from}`);
        for (;;) {
          this.signal.throwIfAborted();
          const { rows } = await this.admin.query<Record<string, unknown>>({
            text: `fetch ${fetchRows} from sluice_snapshot`,
            types,
          });
          for (const row of rows) {
            await this.emit('r', null, row, key, `${t.schema}.${t.table}`, t.datamodelId, position, true, ts);
          }
          if (rows.length < fetchRows) break;
        }
        await this.admin.query('close sluice_snapshot');
        await this.options.flush?.();
        this.options.log?.('info', `snapshot of ${t.schema}.${t.table} complete`);
      }
      await this.admin.query('commit');
    } catch (error) {
      await this.admin.query('rollback').catch(() => undefined);
      throw error;
    }
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
        await this.emit(
          op,
          before,
          after,
          rel.keyColumns,
          rel.entry,
          rel.datamodelId,
          position,
          false,
          this.commitMs,
        );
        return;
      }
      case 'truncate':
        this.options.log?.('warn', 'a TRUNCATE of a captured table is not carried to the change stream');
        return;
      default:
        return;
    }
  }

  private async emit(
    op: ChangeOp,
    before: Record<string, unknown> | null,
    after: Record<string, unknown> | null,
    keyColumns: readonly string[],
    entry: string,
    datamodelId: string,
    position: string,
    snapshot: boolean,
    tsMs: number,
  ): Promise<void> {
    await this.options.onEvent(
      changeEvent({
        op,
        before,
        after,
        keyColumns,
        connector_id: this.options.connectorId,
        datamodel_id: datamodelId,
        entry,
        position,
        snapshot,
        tsMs,
      }),
    );
  }
}

/** With the default replica identity, the old row of a delete has only its key columns (the others are null). */
function keyOnly(rel: Relation, row: Record<string, unknown>, isKeyOnly: boolean): Record<string, unknown> {
  if (!isKeyOnly) return row;
  const identity = new Set(rel.columns.filter((c) => c.identity).map((c) => c.name));
  return Object.fromEntries(Object.entries(row).filter(([k]) => identity.has(k)));
}

/**
 * Drops the connector's slot and, when Sluice created it, its publication
 * (called when the connector is deleted). Missing ones are fine; a slot still
 * in use by a running worker is an error (stop the worker first).
 */
export async function dropPostgresCdc(
  settings: PostgresSourceSettings,
  options: { connectorId: string; policy?: OutboundPolicy },
): Promise<void> {
  const { slot, publication } = cdcNames(options.connectorId, settings);
  const client = await connector(settings, options.policy)(false);
  try {
    const { rows } = await client.query<{ active: boolean }>(
      'select active from pg_replication_slots where slot_name = $1 and database = current_database()',
      [slot],
    );
    if (rows[0]?.active) await waitForSlotRelease(client, slot);
    if (rows[0]) await client.query('select pg_drop_replication_slot($1)', [slot]);
    const pub = await client.query<{ comment: string | null }>(
      `select obj_description(oid, 'pg_publication') as comment from pg_publication where pubname = $1`,
      [publication],
    );
    if ((pub.rows[0]?.comment ?? '').startsWith(MARK_CREATED)) {
      await client.query(`drop publication if exists ${quoteIdent(publication)}`);
    }
  } catch (error) {
    if (error instanceof PostgresCdcError) throw error;
    throw new PostgresCdcError(
      `Dropping the capture of ${settings.database} failed: ${describePgFailure(error, pgWhere(settings))}`,
    );
  } finally {
    await client.end().catch(() => undefined);
  }
}
