import { Producer, ProduceAcks, stringSerializers } from '@platformatic/kafka';
import { WORKER_METRICS } from '@sluice/shared/metrics';
import { TRUNCATE_HEADER, type ChangeEvent } from '../contracts.js';
import type { WorkerContext } from '../engine.js';
import { clientOptions, platformStream } from '../systems/kafka/connection.js';
import { chunkBySize } from '../systems/kafka/produce-chunks.js';

// How a database source publishes: each ChangeEvent to its data model's
// topic on the platform stream broker (SLUICE_STREAM_BROKERS), keyed by the
// JSON of the row's key. Events are buffered and sent in one produce request
// per flush (at most PUBLISH_BATCH at once; idempotent producer, acks=all),
// so a capture that checkpoints after `flush` resolved has every event
// before that point acknowledged by the broker. A truncate concerns every
// key: it goes to every partition of the topic, one copy each, keyed `{}`,
// with the TRUNCATE_HEADER that lets the target apply it in order with
// every partition (docs/data-plane.md "Truncates").

/** Events per produce request at most; also bounds what the worker holds. */
const PUBLISH_BATCH = 500;

export interface ChangePublisher {
  producer: Producer<string, string, string, string>;
  /** Takes one event; publishes the buffer once it holds PUBLISH_BATCH. */
  onEvent(event: ChangeEvent): Promise<void>;
  /** Publishes what is buffered; resolves once the broker acknowledged it. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

export function changePublisher(
  connectorId: string,
  models: readonly { id: string; topic: string }[],
  ctx: WorkerContext,
): ChangePublisher {
  const topicOf = new Map(models.map((d) => [d.id, d.topic]));
  // Same family as the KAFKA_SOURCE worker's, so the monitoring collector reads both alike.
  const published = ctx.metrics.counter(
    WORKER_METRICS.sourceMessages,
    'Change events published to each data model topic since this worker started',
  );
  const lastEvent = ctx.metrics.gauge(
    WORKER_METRICS.sourceLastEvent,
    'Source time of the newest change event published, by data model',
  );
  const producer = new Producer({
    ...clientOptions(platformStream(), `sluice-${connectorId}`),
    idempotent: true,
    acks: ProduceAcks.ALL,
    autocreateTopics: true,
    serializers: stringSerializers,
  });
  const buffered: ChangeEvent[] = [];
  // The topics' partition counts, read once (the topics exist: the source creates them before it publishes).
  const partitionsOf = new Map<string, number>();
  const partitions = async (topic: string): Promise<number> => {
    let n = partitionsOf.get(topic);
    if (n === undefined) {
      const meta = await producer.metadata({ topics: [topic] });
      n = meta.topics.get(topic)?.partitionsCount ?? 1;
      partitionsOf.set(topic, n);
    }
    return n;
  };
  const flush = async () => {
    if (buffered.length === 0) return;
    const events = buffered.splice(0);
    const messages: {
      topic: string;
      key: string;
      value: string;
      partition?: number;
      headers?: Record<string, string>;
    }[] = [];
    for (const event of events) {
      const topic = topicOf.get(event.source.datamodel_id) as string;
      const value = JSON.stringify(event);
      if (event.op !== 't') {
        messages.push({ topic, key: JSON.stringify(event.key), value });
        continue;
      }
      const n = await partitions(topic);
      const header = JSON.stringify({ id: `${event.source.position} ${event.source.entry}`, partitions: n });
      for (let partition = 0; partition < n; partition++)
        messages.push({ topic, key: '{}', value, partition, headers: { [TRUNCATE_HEADER]: header } });
    }
    for (const chunk of chunkBySize(messages)) await producer.send({ messages: chunk });
    // Counted once per data model of the flush, not per event (labels cost).
    const perModel = new Map<string, { n: number; ts: number }>();
    for (const event of events) {
      const seen = perModel.get(event.source.datamodel_id) ?? { n: 0, ts: 0 };
      perModel.set(event.source.datamodel_id, { n: seen.n + 1, ts: event.source.ts_ms });
    }
    for (const [datamodel, { n, ts }] of perModel) {
      published.inc({ datamodel, topic: topicOf.get(datamodel) as string }, n);
      lastEvent.set({ datamodel }, ts / 1000);
    }
  };
  return {
    producer,
    onEvent: async (event) => {
      buffered.push(event);
      if (buffered.length >= PUBLISH_BATCH) await flush();
    },
    flush,
    close: () => producer.close().catch(() => undefined),
  };
}
