import {
  Consumer,
  MessagesStreamFallbackModes,
  MessagesStreamModes,
  type Message,
  type MessagesStream,
} from '@platformatic/kafka';
import { workerOutboundPolicy } from '../outbound.js';
import { SystemFailure } from '../systems/failure.js';
import {
  clientOptions,
  connectionKey,
  streamKafkaConnection,
  type KafkaConnection,
} from '../systems/kafka/connection.js';
import { describeKafkaFailure } from '../systems/kafka/errors.js';
import { unknownTopicIn } from '../systems/kafka/topic-partitions.js';
import type { TargetMetrics } from './metrics.js';
import type { PreparedSubscription } from './records.js';
import type { TargetLoopOptions } from './settings.js';

// The Kafka side of the target loop: one consumer per (cluster, consumer
// group), reading the stream topics of its subscriptions from their
// committed offsets, with its lag measured.

export type RawMessage = Message<Buffer, Buffer, Buffer, Buffer>;

/** The subscriptions one consumer reads for: same cluster, same consumer group. */
export interface Group {
  connection: KafkaConnection;
  groupId: string;
  subs: PreparedSubscription[];
}

export function groupsOf(subs: PreparedSubscription[]): Group[] {
  const groups = new Map<string, Group>();
  for (const s of subs) {
    const connection = streamKafkaConnection(s.config.stream);
    const id = `${connectionKey(connection)}\0${s.config.consumer_id}`;
    const g = groups.get(id) ?? { connection, groupId: s.config.consumer_id, subs: [] };
    g.subs.push(s);
    groups.set(id, g);
  }
  return [...groups.values()];
}

/** Kafka's own consumer default (`max.partition.fetch.bytes`). */
const FETCH_MAX_BYTES_PER_PARTITION = 1024 * 1024;

/** A group's consumer, consuming its topics. */
export interface GroupStream {
  topics: string[];
  stream: MessagesStream<Buffer, Buffer, Buffer, Buffer>;
  /** The partitions of `topic` the group gave this consumer, null before it joined. */
  assigned(topic: string): number[] | null;
  /** Stops the lag monitoring, the stream and the consumer. */
  close(): Promise<void>;
}

/** Joins the group and starts consuming its topics; a missing topic or a refused connection is an error that says so. */
export async function openGroupStream(
  g: Group,
  connectorId: string,
  m: TargetMetrics,
  o: TargetLoopOptions,
): Promise<GroupStream> {
  const topics = [...new Set(g.subs.map((s) => s.config.topic))];
  const consumer = new Consumer<Buffer, Buffer, Buffer, Buffer>({
    ...clientOptions(g.connection, `sluice-${connectorId}`, workerOutboundPolicy()),
    groupId: g.groupId,
    sessionTimeout: 10_000,
    heartbeatInterval: 1_000,
  });
  let stream: MessagesStream<Buffer, Buffer, Buffer, Buffer> | undefined;
  const close = async () => {
    consumer.stopLagMonitoring();
    await stream?.close().catch(() => undefined);
    await consumer.close(true).catch(() => undefined);
  };
  try {
    await consumer.metadata({ topics, autocreateTopics: false }).catch((e: unknown) => {
      const missing = unknownTopicIn(e);
      if (missing === undefined) throw e;
      throw new SystemFailure(`topic ${missing} does not exist on ${g.connection.brokers.join(',')}`, {
        cause: e,
      });
    });
    stream = await consumer.consume({
      topics,
      mode: MessagesStreamModes.COMMITTED,
      // Without committed offsets: from the beginning when a subscription asks for a backfill, else new messages only.
      fallbackMode: g.subs.some((s) => s.config.backfill)
        ? MessagesStreamFallbackModes.EARLIEST
        : MessagesStreamFallbackModes.LATEST,
      autocommit: false,
      maxWaitTime: 500,
      // The client's defaults (50 MiB per fetch and per partition) decode a
      // whole backlog at once, past the back-pressure of `maxBuffered`.
      maxBytes: o.fetchMaxBytes,
      maxBytesPerPartition: Math.min(o.fetchMaxBytes, FETCH_MAX_BYTES_PER_PARTITION),
    });
  } catch (e) {
    await close();
    throw new Error(
      `cannot consume ${topics.join(', ')}: ${describeKafkaFailure(e, g.connection.brokers.join(','))}`,
      { cause: e },
    );
  }
  consumer.on('consumer:lag', (lag) => {
    for (const [topic, partitions] of lag) {
      m.lag.set(
        { topic },
        partitions.reduce((sum, v) => sum + Number(v < 0n ? 0n : v), 0),
      );
    }
  });
  consumer.startLagMonitoring({ topics }, 5_000);
  const assigned = (topic: string) =>
    consumer.assignments?.find((a) => a.topic === topic)?.partitions ?? null;
  return { topics, stream, assigned, close };
}
