import {
  platformStream,
  snapshotMessages,
  type ConsumedMessage,
  SystemFailure,
  fetchRecentKafkaMessages,
  type RawKafkaMessage,
  TABLE_SOURCE_TYPES,
  withSourceReader,
} from '@sluice/dataplane';
import { type WorkerConfig } from '@sluice/shared/catalog';
import { OutboundPolicy } from '@sluice/shared/net';
import { type PreviewSourceKind } from '@sluice/shared/schemas';

// Where the preview's messages come from (docs/data-plane.md "Preview"): the
// newest messages of the subscription's change stream, read with plain Fetch
// requests (no consumer group, nothing committed); for a database source whose
// stream is still empty, a few rows of the source table (PostgreSQL, MySQL,
// MariaDB: the backfill's keyset read) shaped as the snapshot change events
// its worker would publish; or the request's own
// messages. Every message has the shape the target loop consumes
// (ConsumedMessage), so the mapping is the worker's.

type Subscription = NonNullable<WorkerConfig['subscriptions']>[number];

export interface PreviewSourceOptions {
  policy: OutboundPolicy;
  timeoutMs: number;
  limit: number;
}

export interface PreviewMessages {
  kind: PreviewSourceKind;
  topic: string;
  table: string | null;
  messages: ConsumedMessage[];
  warnings: string[];
}

/** The source of a subscription: its connector's id and type, the entry (topic or `schema.table`) and settings. */
export interface PreviewSourceRef {
  connectorId: string;
  connectorType: string;
  datamodelId: string;
  entry: string;
  /** The source connector's configuration, secrets resolved. */
  configuration: Record<string, unknown>;
}

const toConsumed = (topic: string, m: RawKafkaMessage): ConsumedMessage => ({
  topic,
  partition: m.partition,
  offset: m.offset,
  timestamp: m.timestamp,
  key: m.key ?? undefined,
  value: m.value ?? undefined,
  headers: new Map(m.headers.flatMap(([k, v]) => (k ? [[k, v ?? Buffer.alloc(0)] as const] : []))),
});

/** The request's messages on the subscription's topic, at partition -1 (as a backfill's). */
export function givenMessages(
  sub: Subscription,
  source: PreviewSourceRef,
  items: readonly unknown[],
): PreviewMessages {
  const base = { kind: 'request' as const, topic: sub.topic, table: null, warnings: [] };
  if (sub.stream.kind === 'platform') {
    // Database sources: each item is a row, published as a snapshot read would be.
    const rows = items as Record<string, unknown>[];
    return { ...base, messages: snapshotMessages(rows, { columns: [] }, at(sub, source)) };
  }
  const now = BigInt(Date.now());
  return {
    ...base,
    messages: items.map((item, i) => ({
      topic: sub.topic,
      partition: -1,
      offset: BigInt(i),
      timestamp: now,
      key: undefined,
      value: Buffer.from(JSON.stringify(item)),
      headers: new Map(),
    })),
  };
}

const at = (sub: Subscription, source: PreviewSourceRef) => ({
  connectorId: source.connectorId,
  datamodelId: source.datamodelId,
  entry: source.entry,
  topic: sub.topic,
  first: 0,
});

/**
 * The newest messages of the change stream; for a database source, the
 * source table when the stream has none yet (or the platform broker cannot
 * be read: then with a warning saying why).
 */
export async function fetchedMessages(
  sub: Subscription,
  source: PreviewSourceRef,
  o: PreviewSourceOptions,
): Promise<PreviewMessages> {
  if (sub.stream.kind === 'kafka') {
    // The user's cluster: the gateway's address policy applies (SystemFailure → 502).
    const raw = await fetchRecentKafkaMessages(source.configuration, sub.topic, o);
    return {
      kind: 'stream',
      topic: sub.topic,
      table: null,
      messages: raw.map((m) => toConsumed(sub.topic, m)),
      warnings: raw.length === 0 ? [`Topic ${sub.topic} has no messages yet: nothing to map`] : [],
    };
  }
  const warnings: string[] = [];
  let brokers: string[] = [];
  try {
    brokers = platformStream().brokers;
  } catch {
    warnings.push('The platform stream broker (SLUICE_STREAM_BROKERS) is not configured on the gateway');
  }
  if (brokers.length > 0) {
    try {
      // The platform broker is the operator's own setting, not user input: no address policy.
      const raw = await fetchRecentKafkaMessages({ bootstrap_servers: brokers.join(',') }, sub.topic, {
        ...o,
        policy: new OutboundPolicy({ deny: [] }),
      });
      if (raw.length > 0) {
        return {
          kind: 'stream',
          topic: sub.topic,
          table: null,
          messages: raw.map((m) => toConsumed(sub.topic, m)),
          warnings,
        };
      }
      warnings.push(`The change stream ${sub.topic} has no messages yet (never started?)`);
    } catch (e) {
      const why = e instanceof SystemFailure ? e.message : 'it could not be read';
      warnings.push(
        /does not exist/.test(why)
          ? `The change stream ${sub.topic} does not exist yet (never started)`
          : `The change stream ${sub.topic} could not be read: ${why}`,
      );
    }
  }
  if (!TABLE_SOURCE_TYPES.includes(source.connectorType)) {
    throw new SystemFailure(
      `${warnings.join('; ')}; sampling a ${source.connectorType} table is not supported by this version of Sluice`,
    );
  }
  warnings.push(`Rows sampled from the source table ${source.entry}, as snapshot change events`);
  // The pre-flight checks' connection and deadlines (the outbound policy, or the SSH tunnel).
  const reader = {
    ...o,
    connectTimeoutMs: o.timeoutMs,
    queryTimeoutMs: o.timeoutMs,
    applicationName: 'sluice-preflight',
  };
  const messages = await withSourceReader(source.connectorType, source.configuration, reader, async (r) => {
    const table = await r.table(source.entry);
    const { rows } = await table.page(null, o.limit);
    return snapshotMessages(rows, { columns: table.keyColumns }, at(sub, source));
  });
  return { kind: 'table', topic: sub.topic, table: source.entry, messages, warnings };
}
