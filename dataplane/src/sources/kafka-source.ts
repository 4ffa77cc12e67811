import { Consumer } from '@platformatic/kafka';
import type { Engine } from '../engine.js';
import { isOutboundRefusal } from '../systems/kafka/broker-policy.js';
import { clientOptions, kafkaConnection } from '../systems/kafka/connection.js';
import { workerOutboundPolicy } from '../outbound.js';
import { resolveSecrets } from '../secrets.js';
import { describeKafkaFailure } from '../systems/kafka/errors.js';
import { WORKER_METRICS } from '@sluice/shared/metrics';

// KAFKA_SOURCE: the source topic is itself the change stream (spec; docs/
// data-plane.md), so this worker copies nothing. It proves the connection and
// the topics (a wrong address, password or topic ends the connector in
// `error` with the reason), then reports what is on each data model's topic.
// Target workers read the topic directly with the source's settings.

const POLL_MS = 5_000;

export const kafkaSourceEngine: Engine = {
  async start(raw, signal, ctx) {
    const config = resolveSecrets(raw);
    const conn = kafkaConnection(config.configuration);
    const datamodels = (config.datamodels ?? []).filter((d) => d.enabled);
    const topics = [...new Set(datamodels.map((d) => d.topic))];
    // Offsets are listed without joining a group: this worker consumes nothing.
    const client = new Consumer({
      ...clientOptions(conn, `sluice-${config.connector_id}`, workerOutboundPolicy()),
      groupId: `sluice-${config.connector_id}-monitor`,
    });
    try {
      // Throws "Unknown topic …" for a topic that does not exist.
      await client.metadata({ topics, autocreateTopics: false, forceUpdate: true });
    } catch (e) {
      await client.close().catch(() => undefined);
      throw new Error(`cannot read the source topics: ${describeKafkaFailure(e, conn.brokers.join(','))}`, {
        cause: e,
      });
    }

    const r = ctx.metrics;
    const endOffset = r.gauge(
      'sluice_source_topic_end_offset',
      'Sum over partitions of the end offset of each data model topic',
    );
    const seen = r.counter(
      WORKER_METRICS.sourceMessages,
      'Messages written to each data model topic since this worker started',
    );
    const partitions = r.gauge('sluice_source_topic_partitions', 'Partitions of each data model topic');
    const polls = r.counter('sluice_source_poll_errors_total', 'Failed reads of the topics end offsets');
    const first = new Map<string, number>();

    const poll = async () => {
      if (topics.length === 0) return;
      try {
        const offsets = await client.listOffsets({ topics });
        for (const dm of datamodels) {
          const list = offsets.get(dm.topic) ?? [];
          const end = list.reduce((sum, o) => sum + Number(o), 0);
          if (!first.has(dm.id)) first.set(dm.id, end);
          const labels = { datamodel: dm.id, topic: dm.topic };
          endOffset.set(labels, end);
          partitions.set(labels, list.length);
          seen.set(labels, end - (first.get(dm.id) ?? end));
        }
      } catch (e) {
        // A partition leader the outbound policy refuses stays refused: the connector fails.
        if (isOutboundRefusal(e)) {
          throw new Error(
            `cannot read the source topics: ${describeKafkaFailure(e, conn.brokers.join(','))}`,
            {
              cause: e,
            },
          );
        }
        // A broker restart is not the connector's failure: report and poll again.
        polls.inc();
        ctx.log('warn', 'reading the source topics offsets failed', {
          reason: describeKafkaFailure(e, conn.brokers.join(',')),
        });
      }
    };
    try {
      await poll();
    } catch (e) {
      await client.close().catch(() => undefined);
      throw e;
    }
    let fail: (e: unknown) => void = () => undefined;
    const timer = setInterval(() => void poll().catch((e: unknown) => fail(e)), POLL_MS);
    const done = new Promise<void>((resolve, reject) => {
      fail = (e) => {
        clearInterval(timer);
        void client
          .close(true)
          .catch(() => undefined)
          .then(() => reject(e as Error));
      };
      signal.addEventListener(
        'abort',
        () => {
          clearInterval(timer);
          void client
            .close(true)
            .catch(() => undefined)
            .then(() => resolve());
        },
        { once: true },
      );
    });
    return { done };
  },
};
