import { type WorkerConfig } from '@sluice/shared/catalog';
import { compileMapper, type CompiledMapper, type MapperRow } from '@sluice/shared/mapper';
import type { ChangeEvent, SinkRecord } from '../contracts.js';

// One consumed message → the records a target writes: parse, map with each
// subscription's mapper, route failures to the subscription's error table.
// Pure (no I/O), so the target loop only moves batches and offsets.

type SubscriptionConfig = NonNullable<WorkerConfig['subscriptions']>[number];

/** What the loop knows of a consumed Kafka message. */
export interface ConsumedMessage {
  topic: string;
  partition: number;
  offset: bigint;
  /** Kafka timestamp, ms since the epoch. */
  timestamp: bigint;
  key: Buffer | undefined;
  value: Buffer | undefined;
  headers: Map<Buffer, Buffer>;
}

/** A subscription ready to run: its compiled mapper and key columns. */
export interface PreparedSubscription {
  config: SubscriptionConfig;
  mapper: CompiledMapper | undefined;
  /** Columns marked `primary_key` in the mapper; empty means "the whole row" (docs/data-plane.md). */
  keyColumns: string[];
  /** Messages on this stream are ChangeEvent envelopes (database sources), not user messages. */
  changeEvents: boolean;
  includeMetadata: boolean;
}

/** The key of every error-table row: one per failed row of a message, writing it twice changes nothing. */
export const ERROR_KEY_COLUMNS = [
  'subscription_id',
  'source_topic',
  'source_partition',
  'source_offset',
  'row_index',
];

export function prepareSubscription(config: SubscriptionConfig): PreparedSubscription {
  const rules = Array.isArray(config.mapper_config) ? config.mapper_config : [];
  let mapper: CompiledMapper | undefined;
  try {
    // An empty rule set is the identity mapping: the message is the row.
    mapper = rules.length > 0 ? compileMapper(rules) : undefined;
  } catch (e) {
    throw new Error(
      `subscription ${config.id}: invalid mapper: ${e instanceof Error ? e.message : String(e)}`,
      { cause: e },
    );
  }
  const keyColumns = rules.flatMap((r) =>
    r && typeof r === 'object' && (r as { primary_key?: unknown }).primary_key === true
      ? [String((r as { key: unknown }).key)]
      : [],
  );
  return {
    config,
    mapper,
    keyColumns,
    changeEvents: config.stream.kind === 'platform',
    includeMetadata: config.stream.kind === 'kafka' && config.stream.include_metadata,
  };
}

export type FailureKind = 'empty' | 'not_json' | 'not_change_event' | 'mapper';

export interface MappedMessage {
  records: SinkRecord[];
  /**
   * Rows and messages that failed (also in `records` when an error table is
   * enabled). `kind` is for logs and metrics; `reason` may quote the content;
   * `index` and `row` are the failed row of the mapper's output (null when the
   * message itself failed), which the preview endpoint shows.
   */
  failures: {
    subscription: string;
    kind: FailureKind;
    reason: string;
    index: number;
    row: MapperRow | null;
  }[];
  /** When the event was produced, ms since the epoch: `emitted_ms` of an envelope, else the Kafka timestamp. */
  producedMs: number;
}

const text = (b: Buffer | undefined) => (b === undefined ? null : b.toString('utf8'));

/** `include_metadata` (spec 2.13): the Kafka coordinates under `_kafka`, for mapper paths like `_kafka|offset`. */
function metadataOf(m: ConsumedMessage): Record<string, unknown> {
  return {
    topic: m.topic,
    partition: m.partition,
    offset: m.offset.toString(),
    timestamp: Number(m.timestamp),
    key: text(m.key),
    headers: Object.fromEntries([...m.headers].map(([k, v]) => [k.toString('utf8'), v.toString('utf8')])),
  };
}

type Parsed = { ok: true; value: unknown } | { ok: false; kind: FailureKind; reason: string };

function parse(m: ConsumedMessage): Parsed {
  if (m.value === undefined || m.value.length === 0) {
    return { ok: false, kind: 'empty', reason: 'empty message (no value)' };
  }
  try {
    return { ok: true, value: JSON.parse(m.value.toString('utf8')) };
  } catch (e) {
    return { ok: false, kind: 'not_json', reason: `not JSON: ${e instanceof Error ? e.message : String(e)}` };
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Maps one message for every subscription reading its topic. */
export function mapMessage(m: ConsumedMessage, subs: readonly PreparedSubscription[]): MappedMessage {
  const records: SinkRecord[] = [];
  const failures: MappedMessage['failures'] = [];
  const parsed = parse(m);
  let producedMs = Number(m.timestamp);
  if (parsed.ok && isObject(parsed.value) && typeof parsed.value.emitted_ms === 'number') {
    producedMs = parsed.value.emitted_ms;
  }

  const fail = (
    s: PreparedSubscription,
    kind: FailureKind,
    reason: string,
    index: number,
    row: MapperRow | null,
  ) => {
    failures.push({ subscription: s.config.id, kind, reason, index, row });
    const et = s.config.error_table;
    if (!et.enabled || !et.name) return;
    records.push({
      op: 'upsert',
      table: et.name,
      keyColumns: ERROR_KEY_COLUMNS,
      row: {
        subscription_id: s.config.id,
        source_topic: m.topic,
        source_partition: m.partition,
        source_offset: m.offset.toString(),
        row_index: index,
        reason,
        message: text(m.value),
        message_key: text(m.key),
        row,
        failed_at: new Date().toISOString(),
      },
    });
  };

  for (const s of subs) {
    if (s.config.topic !== m.topic) continue;
    if (!parsed.ok) {
      fail(s, parsed.kind, parsed.reason, 0, null);
      continue;
    }
    let input: unknown = parsed.value;
    let op: SinkRecord['op'] = 'upsert';
    if (s.changeEvents) {
      const event = parsed.value as Partial<ChangeEvent>;
      if (!isObject(event) || typeof event.op !== 'string') {
        fail(s, 'not_change_event', 'not a change event (no `op`)', 0, null);
        continue;
      }
      if (event.op === 't') {
        // Every row of the table: nothing to map (no row), the subscription's table to empty.
        records.push({
          op: 'truncate',
          table: s.config.target_table_name,
          row: {},
          keyColumns: s.keyColumns,
        });
        continue;
      }
      op = event.op === 'd' ? 'delete' : 'upsert';
      input = op === 'delete' ? (event.before ?? event.key ?? {}) : (event.after ?? {});
    } else if (s.includeMetadata && isObject(input)) {
      input = { ...input, _kafka: metadataOf(m) };
    }
    const rows: MapperRow[] = s.mapper ? s.mapper.apply(input) : [isObject(input) ? input : { value: input }];
    rows.forEach((mapped, index) => {
      let row = mapped;
      // A delete is applied by its key: without one it would delete nothing.
      const keyless = op === 'delete' ? s.keyColumns.filter((k) => row[k] == null) : [];
      if (keyless.length > 0) {
        const reason =
          'error' in row ? String(row.error) : `a delete without a value for its key (${keyless.join(', ')})`;
        fail(s, 'mapper', reason, index, row);
        return;
      }
      if ('error' in row) {
        // A delete needs its key only. Its `before` holds just the key columns
        // unless the table has REPLICA IDENTITY FULL, so a rule requiring
        // another column (`nullable: false`) must not turn every delete into
        // a failure: with each key column mapped, the key is what is deleted.
        if (op !== 'delete' || s.keyColumns.length === 0) {
          fail(s, 'mapper', String(row.error), index, row);
          return;
        }
        row = Object.fromEntries(s.keyColumns.map((k) => [k, mapped[k]]));
      }
      records.push({
        op,
        table: s.config.target_table_name,
        row,
        keyColumns: s.keyColumns.length > 0 ? s.keyColumns : Object.keys(row),
        ...(s.keyColumns.length === 0 ? { wholeRowKey: true } : {}),
      });
    });
  }
  return { records, failures, producedMs };
}
