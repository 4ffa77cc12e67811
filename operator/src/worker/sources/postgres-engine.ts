import { Producer, ProduceAcks, stringSerializers } from '@platformatic/kafka';
import type { Engine } from '../engines.js';
import { clientOptions, platformStream } from '../kafka/connection.js';
import { workerOutboundPolicy } from '../outbound.js';
import { resolveSecrets } from '../secrets.js';
import { startPostgresCdc, type PostgresSourceSettings } from './postgres-cdc.js';
import { watchSlotRetention } from './slot-retention-gauge.js';

// POSTGRES_SOURCE: logical replication (postgres-cdc.ts) of the enabled data
// models' tables, each change published as a ChangeEvent to its data model's
// topic on the platform stream broker (SLUICE_STREAM_BROKERS), keyed by the
// JSON of the row's primary key. The capture acknowledges a transaction's LSN
// only after every event of it was acknowledged by the broker (idempotent
// producer, acks=all): a crash replays, never loses (docs/data-plane.md).

export const postgresSourceEngine: Engine = {
  async start(raw, signal, ctx) {
    const config = resolveSecrets(raw);
    const models = (config.datamodels ?? []).filter((d) => d.enabled);
    if (models.length === 0) throw new Error('no enabled data model: nothing to capture');
    const topicOf = new Map(models.map((d) => [d.id, d.topic]));
    // Same family as the KAFKA_SOURCE worker's, so the monitoring collector reads both alike.
    const published = ctx.metrics.counter(
      'sluice_source_messages_total',
      'Change events published to each data model topic since this worker started',
    );
    const lastEvent = ctx.metrics.gauge(
      'sluice_source_last_event_timestamp_seconds',
      'Source time of the newest change event published, by data model',
    );
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
            await producer.send({
              messages: [
                {
                  topic: topicOf.get(event.source.datamodel_id) as string,
                  key: JSON.stringify(event.key),
                  value: JSON.stringify(event),
                },
              ],
            });
            const labels = {
              datamodel: event.source.datamodel_id,
              topic: topicOf.get(event.source.datamodel_id) as string,
            };
            published.inc(labels);
            lastEvent.set({ datamodel: event.source.datamodel_id }, event.source.ts_ms / 1000);
          },
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
