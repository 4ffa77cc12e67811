import type { Engine } from '../engine.js';
import { workerOutboundPolicy } from '../outbound.js';
import { resolveSecrets } from '../secrets.js';
import { changePublisher } from './change-publisher.js';
import { startPostgresCdc } from './postgres-cdc/capture.js';
import type { PostgresSourceSettings } from './postgres-cdc/contract.js';
import { watchSlotRetention } from './slot-retention-gauge.js';

// POSTGRES_SOURCE: logical replication (postgres-cdc/) of the enabled data
// models' tables, each change published as a ChangeEvent to its data model's
// topic on the platform stream broker (change-publisher.ts); the capture
// acknowledges a transaction's LSN only after the flush that carries its
// events was acknowledged by the broker: a crash replays, never loses
// (docs/data-plane.md).

export const postgresSourceEngine: Engine = {
  async start(raw, signal, ctx) {
    const config = resolveSecrets(raw);
    const models = (config.datamodels ?? []).filter((d) => d.enabled);
    if (models.length === 0) throw new Error('no enabled data model: nothing to capture');
    const publisher = changePublisher(config.connector_id, models, ctx);
    try {
      const capture = await startPostgresCdc(
        config.configuration as unknown as PostgresSourceSettings,
        {
          connectorId: config.connector_id,
          tables: models.map((d) => ({ entry: d.entry, datamodelId: d.id })),
          policy: workerOutboundPolicy(),
          onEvent: publisher.onEvent,
          flush: publisher.flush,
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
          return publisher.close();
        }),
      };
    } catch (e) {
      await publisher.close();
      throw e;
    }
  },
};
