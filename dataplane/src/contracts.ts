// The two seams of the data plane, fixed here so sources, the target loop and
// the sinks are built (and tested) apart:
//   source worker ──ChangeEvent──▶ change stream (a Kafka topic)
//   target worker: stream ──mapper──▶ SinkRecord batches ──▶ Sink
// docs/data-plane.md describes the envelope and the topic naming for users.

/**
 * `c` insert, `u` update, `d` delete, `r` a row read by a snapshot
 * (backfill), `t` the table was truncated (every row removed; no row, no key).
 */
export type ChangeOp = 'c' | 'u' | 'd' | 'r' | 't';

/**
 * A change event on a change stream (JSON value of the Kafka message; the
 * message key is the JSON of `key`). Sources that capture a database emit
 * it; a KAFKA_SOURCE's topic is its own stream and carries the user's
 * messages as they are.
 */
export interface ChangeEvent {
  op: ChangeOp;
  /** The row before the change (updates and deletes, when the source has it). */
  before: Record<string, unknown> | null;
  /** The row after the change (inserts, updates, snapshot reads). */
  after: Record<string, unknown> | null;
  /** The primary-key columns of the row and their values; `{}` for a truncate (it concerns every key). */
  key: Record<string, unknown>;
  /** A truncate's options at the source (PostgreSQL's CASCADE and RESTART IDENTITY), for information. */
  truncate?: { cascade: boolean; restart_identity: boolean };
  source: {
    connector_id: string;
    datamodel_id: string;
    /** `schema.table` for databases. */
    entry: string;
    /** Source position: the LSN for PostgreSQL (`0/16B6C50`), as a string. */
    position: string;
    snapshot: boolean;
    /** Commit time at the source, ms since the epoch. */
    ts_ms: number;
  };
  /** When the source worker emitted it, ms since the epoch (end-to-end latency). */
  emitted_ms: number;
}

/** The envelope of one change: its key is `keyColumns` of the row after (else before) it. */
export function changeEvent(
  e: Pick<ChangeEvent, 'op' | 'before' | 'after'> &
    Omit<ChangeEvent['source'], 'ts_ms'> & { keyColumns: readonly string[]; tsMs: number },
): ChangeEvent {
  const row = e.after ?? e.before ?? {};
  return {
    op: e.op,
    before: e.before,
    after: e.after,
    key: Object.fromEntries(e.keyColumns.map((k) => [k, row[k] ?? null])),
    source: {
      connector_id: e.connector_id,
      datamodel_id: e.datamodel_id,
      entry: e.entry,
      position: e.position,
      snapshot: e.snapshot,
      ts_ms: e.tsMs,
    },
    emitted_ms: Date.now(),
  };
}

/**
 * A truncate of a data model's table, as its publisher copies it to every
 * partition of the topic (`TRUNCATE_HEADER`): the target applies it once the
 * copies of every partition arrived (docs/data-plane.md "Truncates").
 */
export function truncateEvent(
  e: Omit<ChangeEvent['source'], 'ts_ms' | 'snapshot'> & {
    tsMs: number;
    truncate?: ChangeEvent['truncate'];
  },
): ChangeEvent {
  return {
    op: 't',
    before: null,
    after: null,
    key: {},
    ...(e.truncate ? { truncate: e.truncate } : {}),
    source: {
      connector_id: e.connector_id,
      datamodel_id: e.datamodel_id,
      entry: e.entry,
      position: e.position,
      snapshot: false,
      ts_ms: e.tsMs,
    },
    emitted_ms: Date.now(),
  };
}

/**
 * The Kafka header of each copy of a truncate event: JSON
 * `{"id": "<position> <entry>", "partitions": <the topic's count>}`. The
 * target loop reads it without parsing the value, holds each partition at
 * its copy until every partition's copy arrived, then lets them through
 * together (`target/truncate-barrier.ts`).
 */
export const TRUNCATE_HEADER = 'sluice-truncate';

/** One row for a target, after the mapper; `truncate` removes every row of `table` (row `{}`). */
export interface SinkRecord {
  op: 'upsert' | 'delete' | 'truncate';
  /** The subscription's target_table_name (a table, or a topic for brokers). */
  table: string;
  /** The mapped row (for deletes: at least the key columns). */
  row: Record<string, unknown>;
  /** Names of the key columns of `row` (upserts and deletes are by these). */
  keyColumns: string[];
  /**
   * True when the subscription marks no `primary_key`, so `keyColumns` is
   * the whole row: tables still need it to upsert, a broker writes no key.
   */
  wholeRowKey?: boolean;
}

/**
 * Where a target worker writes. `write` resolves only once the batch is
 * durable at the target — the caller acknowledges the stream (commits
 * offsets) after it, which makes delivery at-least-once — and writing the
 * same batch twice leaves the target as writing it once (upserts by key).
 *
 * `ready`, when given, resolves once the batch may reach the target (the
 * previous batch's offsets are committed): a Sink may prepare the batch
 * before it (serialize, build statements: CPU work that then overlaps the
 * commit) but sends nothing of it until then, so a worker killed at any
 * point replays at most one batch.
 */
export interface Sink {
  write(batch: readonly SinkRecord[], signal: AbortSignal, ready?: Promise<void>): Promise<void>;
  close(): Promise<void>;
}
