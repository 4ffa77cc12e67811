import { Admin, Consumer, ListOffsetTimestamps } from '@platformatic/kafka';
import type { OutboundPolicy } from '@sluice/shared/net';
import {
  clientOptions,
  kafkaConnection,
  type KafkaClientOptions,
  type KafkaConnection,
} from './connection.js';
import { byLeader, fetchFromLeaders } from './fetch.js';
import { SystemFailure, withDeadline } from '../failure.js';
import { describeKafkaFailure } from './errors.js';

// Pre-flight checks of a Kafka cluster (spec 4.5, KAFKA_SOURCE; the BYOK
// broker of an environment): the workers' connection settings
// (dataplane/src/systems/kafka/connection.ts), no retries, short deadlines, and
// the outbound-address policy on every broker address the client dials.

export interface KafkaCheckOptions {
  policy: OutboundPolicy;
  /** Deadline of the whole check (ms). */
  timeoutMs: number;
}

/** How many messages fetch-messages returns at most, and how much of each value. */
export const FETCH_LIMIT = 10;
export const FETCH_MAX_VALUE_CHARS = 4096;
const FETCH_MAX_BYTES = 1024 * 1024;

export interface FetchedMessage {
  partition: number;
  offset: string;
  timestamp: number;
  key: string | null;
  /** The value parsed as JSON when it is JSON, else its text (cut at FETCH_MAX_VALUE_CHARS). */
  value: unknown;
  headers: Record<string, string>;
  truncated: boolean;
}

/**
 * The client options of a check: the workers' own (the outbound address
 * policy on every broker the client dials, bootstrap or named by the
 * cluster's metadata: dataplane/src/systems/kafka/broker-policy.ts), no
 * retries, short deadlines.
 */
export function kafkaProbeOptions(
  conn: KafkaConnection,
  policy: OutboundPolicy,
  timeoutMs: number,
): KafkaClientOptions {
  let base: KafkaClientOptions;
  try {
    base = clientOptions(conn, 'sluice-preflight', policy);
  } catch (e) {
    throw new SystemFailure((e as Error).message);
  }
  return {
    ...base,
    retries: 0,
    connectTimeout: Math.min(5_000, timeoutMs),
    requestTimeout: timeoutMs,
  };
}

/** Connects with the settings and reads the cluster's metadata; throws a SystemFailure-worthy error. */
async function withCluster<T>(
  config: Record<string, unknown>,
  opts: KafkaCheckOptions,
  fn: (client: Consumer<Buffer, Buffer, Buffer, Buffer>, conn: KafkaConnection) => Promise<T>,
): Promise<T> {
  const conn = kafkaConnection(config);
  const where = conn.brokers.join(',') || 'the configured brokers';
  try {
    if (conn.brokers.length === 0) throw new SystemFailure('No Kafka bootstrap servers are configured');
    // A consumer lists offsets and fetches without joining a group: nothing is left on the cluster.
    const client = new Consumer<Buffer, Buffer, Buffer, Buffer>({
      ...kafkaProbeOptions(conn, opts.policy, opts.timeoutMs),
      groupId: 'sluice-preflight',
    });
    try {
      return await withDeadline(fn(client, conn), opts.timeoutMs, where);
    } finally {
      await client.close(true).catch(() => undefined);
    }
  } catch (e) {
    throw new SystemFailure(describeKafkaFailure(e, where), { cause: e });
  }
}

/**
 * check-credentials: connect, authenticate, read the metadata, then connect
 * to every broker it names (as a worker will: each under the address policy).
 */
export async function checkKafka(
  config: Record<string, unknown>,
  opts: KafkaCheckOptions,
): Promise<{ brokers: number; topics: number }> {
  return withCluster(config, opts, async (client) => {
    const meta = await client.metadata({ topics: [], forceUpdate: true });
    await client.connectToBrokers();
    return { brokers: meta.brokers.size, topics: meta.topics.size };
  });
}

/** list-topics: every topic the credentials may describe, internal ones left out, sorted. */
export async function listKafkaTopics(
  config: Record<string, unknown>,
  opts: KafkaCheckOptions,
): Promise<{ name: string; partitions: number }[]> {
  const conn = kafkaConnection(config);
  const where = conn.brokers.join(',') || 'the configured brokers';
  try {
    if (conn.brokers.length === 0) throw new SystemFailure('No Kafka bootstrap servers are configured');
    const admin = new Admin(kafkaProbeOptions(conn, opts.policy, opts.timeoutMs));
    try {
      return await withDeadline(
        (async () => {
          const names = (await admin.listTopics({ includeInternals: false })).sort();
          const meta = names.length ? await admin.metadata({ topics: names }) : undefined;
          return names.map((name) => ({ name, partitions: meta?.topics.get(name)?.partitionsCount ?? 0 }));
        })(),
        opts.timeoutMs,
        where,
      );
    } finally {
      await admin.close().catch(() => undefined);
    }
  } catch (e) {
    throw new SystemFailure(describeKafkaFailure(e, where), { cause: e });
  }
}

function text(buffer: Buffer | null | undefined): string | null {
  return buffer ? buffer.toString('utf8') : null;
}

function decodeValue(buffer: Buffer | null): { value: unknown; truncated: boolean } {
  if (!buffer) return { value: null, truncated: false };
  const raw = buffer.toString('utf8');
  if (raw.length <= FETCH_MAX_VALUE_CHARS) {
    try {
      return { value: JSON.parse(raw), truncated: false };
    } catch {
      return { value: raw, truncated: false };
    }
  }
  return { value: raw.slice(0, FETCH_MAX_VALUE_CHARS), truncated: true };
}

/** A message as the broker returned it (the preview maps these exactly as a worker would). */
export interface RawKafkaMessage {
  partition: number;
  offset: bigint;
  /** Kafka timestamp, ms since the epoch. */
  timestamp: bigint;
  key: Buffer | null;
  value: Buffer | null;
  headers: [Buffer | null, Buffer | null][];
}

/**
 * The most recent messages of `topic` (at most `limit`, oldest first), read
 * at the end offsets of its partitions with plain Fetch requests: no consumer
 * group is joined and nothing is committed. Used by fetch-messages and by the
 * subscription preview.
 */
export async function fetchRecentKafkaMessages(
  config: Record<string, unknown>,
  topic: string,
  opts: KafkaCheckOptions & { limit: number },
): Promise<RawKafkaMessage[]> {
  const limit = Math.max(1, Math.floor(opts.limit));
  return withCluster(config, opts, async (client, conn) => {
    const missing = () => new SystemFailure(`Topic ${topic} does not exist on ${conn.brokers.join(',')}`);
    const meta = await client
      .metadata({ topics: [topic], autocreateTopics: false, forceUpdate: true })
      .catch((e: unknown) => {
        throw /unknown topic/i.test(describeKafkaFailure(e, '')) ? missing() : e;
      });
    const info = meta.topics.get(topic);
    if (!info) throw missing();
    const [ends, starts] = await Promise.all([
      client.listOffsets({ topics: [topic] }),
      client.listOffsets({ topics: [topic], timestamp: ListOffsetTimestamps.EARLIEST }),
    ]);
    const end = ends.get(topic) ?? [];
    const start = starts.get(topic) ?? [];
    // The partitions to read, each from max(start, end - limit).
    const wanted = info.partitions.flatMap((_, partition) => {
      const e = end[partition] ?? 0n;
      const s = start[partition] ?? 0n;
      if (e <= s) return [];
      return [{ partition, fetchOffset: e - BigInt(limit) > s ? e - BigInt(limit) : s }];
    });
    const out: RawKafkaMessage[] = [];
    const fetched = await fetchFromLeaders(
      client,
      info.id,
      byLeader(info.partitions, wanted),
      FETCH_MAX_BYTES,
    );
    for (const p of fetched) {
      const from = wanted.find((x) => x.partition === p.partition)?.fetchOffset ?? 0n;
      for (const batch of p.batches) {
        for (const r of batch.records) {
          const offset = batch.firstOffset + BigInt(r.offsetDelta);
          if (offset < from) continue;
          out.push({
            partition: p.partition,
            offset,
            timestamp: batch.firstTimestamp + r.timestampDelta,
            key: r.key ?? null,
            value: r.value ?? null,
            headers: r.headers,
          });
        }
      }
    }
    // The newest `limit` over all partitions, oldest first.
    out.sort((a, b) => {
      const by = (x: bigint, y: bigint) => (x < y ? -1 : x > y ? 1 : 0);
      return by(a.timestamp, b.timestamp) || a.partition - b.partition || by(a.offset, b.offset);
    });
    return out.slice(-limit);
  });
}

/**
 * fetch-messages: the most recent messages of `topic` (at most `limit`,
 * newest last), values decoded for reading.
 */
export async function fetchKafkaMessages(
  config: Record<string, unknown>,
  topic: string,
  opts: KafkaCheckOptions & { limit?: number },
): Promise<FetchedMessage[]> {
  const limit = Math.max(1, Math.min(opts.limit ?? FETCH_LIMIT, FETCH_LIMIT));
  const raw = await fetchRecentKafkaMessages(config, topic, { ...opts, limit });
  return raw.map((r) => {
    const { value, truncated } = decodeValue(r.value);
    const headers: Record<string, string> = {};
    for (const [k, v] of r.headers) if (k) headers[k.toString('utf8')] = text(v) ?? '';
    return {
      partition: r.partition,
      offset: r.offset.toString(),
      timestamp: Number(r.timestamp),
      key: text(r.key),
      value,
      headers,
      truncated,
    };
  });
}
