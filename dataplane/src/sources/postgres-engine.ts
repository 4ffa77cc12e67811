import { Producer, ProduceAcks, stringSerializers } from '@platformatic/kafka';
import type { ChangeEvent } from '../contracts.js';
import type { Engine } from '../engine.js';
import { clientOptions, platformStream } from '../systems/kafka/connection.js';
import { chunkBySize } from '../systems/kafka/produce-chunks.js';
import { workerOutboundPolicy } from '../outbound.js';
import { resolveSecrets } from '../secrets.js';
import { startPostgresCdc } from './postgres-cdc/capture.js';
import type { PostgresSourceSettings } from './postgres-cdc/contract.js';
import { watchSlotRetention } from './slot-retention-gauge.js';
import { WORKER_METRICS } from '@sluice/shared/metrics';

// POSTGRES_SOURCE: logical replication (postgres-cdc/) of the enabled data
// models' tables, each change published as a ChangeEvent to its data model's
// topic on the platform stream broker (SLUICE_STREAM_BROKERS), keyed by the
// JSON of the row's primary key. Events are buffered and sent in one produce
// request per flush (at most PUBLISH_BATCH at once); the capture acknowledges a
// transaction's LSN only after the flush that carries its events was
// acknowledged by the broker (idempotent producer, acks=all): a crash
// replays, never loses (docs/data-plane.md).

/** Events per produce request at most; also bounds what the worker holds. */
const PUBLISH_BATCH = 500;

export const postgresSourceEngine: Engine = {
  async start(raw, signal, ctx) {
    const config = resolveSecrets(raw);
    const models = (config.datamodels ?? []).filter((d) => d.enabled);
    if (models.length === 0) throw new Error('no enabled data model: nothing to capture');
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
    const buffered: ChangeEvent[] = [];
    const flush = async () => {
      if (buffered.length === 0) return;
      const events = buffered.splice(0);
      const messages = events.map((event) => ({
        topic: topicOf.get(event.source.datamodel_id) as string,
        key: JSON.stringify(event.key),
        value: JSON.stringify(event),
      }));
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
    const producer = new Producer({
      ...clientOptions(platformStream(), `sluice-${config.connector_id}`),
      idempotent: true,
      acks: ProduceAcks.ALL,
      autocreateTopics: true,
      serializers: stringSerializers,
    });
    try {
      const capture = await startPostgresCdc(
        config.configuration as unknown as PostgresSourceSettings,
        {
          connectorId: config.connector_id,
          tables: models.map((d) => ({ entry: d.entry, datamodelId: d.id })),
          policy: workerOutboundPolicy(),
          onEvent: async (event) => {
            buffered.push(event);
            if (buffered.length >= PUBLISH_BATCH) await flush();
          },
          flush,
          log: (level, msg) => ctx.log(level, msg),
        },
        signal,
      );
      ctx.log('info', 'capturing', { tables: models.length });
      const stopWatching = watchSlotRetention(config.configuration as unknown as PostgresSourceSettings, {
        connectorId: config.connector_id,
        ctx,
      });
      return {
        done: capture.done.finally(() => {
          stopWatching();
          return producer.close().catch(() => undefined);
        }),
      };
    } catch (e) {
      await producer.close().catch(() => undefined);
      throw e;
    }
  },
};
