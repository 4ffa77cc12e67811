import type { Engine } from '../engine.js';
import { workerOutboundPolicy } from '../outbound.js';
import { resolveSecrets } from '../secrets.js';
import { SystemFailure } from '../systems/failure.js';
import { platformStream } from '../systems/kafka/connection.js';
import { describeKafkaFailure } from '../systems/kafka/errors.js';
import type { MysqlEngine } from '../systems/mysql/connection.js';
import { WORKER_METRICS } from '@sluice/shared/metrics';
import { watchBinlogRetention } from './binlog-retention-gauge.js';
import { changePublisher } from './change-publisher.js';
import { startMysqlCdc } from './mysql-cdc/capture.js';
import type { MysqlSourceSettings } from './mysql-cdc/contract.js';
import { positionStore } from './mysql-cdc/position-store.js';

// MYSQL_SOURCE and MARIADB_SOURCE: the binary log capture (mysql-cdc/) of
// the enabled data models' tables, each change published as a ChangeEvent to
// its data model's topic on the platform stream broker (change-publisher.ts),
// keyed by the row's primary key (the whole row for a table without one).
// The capture records its binary log position (position-store.ts) only after
// the flush that carries the events before it was acknowledged: a crash
// replays, never loses (docs/data-plane-mysql.md). Its /metrics also carry
// the binary log figures (binlog-retention-gauge.ts): lag in bytes, the log
// the recorded position needs against those the server holds, and rates.

function mysqlSourceEngine(engine: MysqlEngine): Engine {
  return {
    async start(raw, signal, ctx) {
      const config = resolveSecrets(raw);
      const models = (config.datamodels ?? []).filter((d) => d.enabled);
      if (models.length === 0) throw new Error('no enabled data model: nothing to capture');
      const transactions = ctx.metrics.counter(
        'sluice_source_transactions_total',
        'Committed transactions read from the binary log (captured tables or not)',
      );
      const lag = ctx.metrics.gauge(
        WORKER_METRICS.binlogLagSeconds,
        'Time between the newest transaction read from the binary log and its reading',
      );
      const checkpointed = ctx.metrics.gauge(
        'sluice_source_binlog_checkpoint_offset',
        'Offset in its binary log file of the position last recorded',
      );
      const publisher = changePublisher(config.connector_id, models, ctx);
      const settings = config.configuration as MysqlSourceSettings;
      let events = 0;
      const binlog = watchBinlogRetention(settings, {
        engine,
        ctx,
        counts: () => ({ events, transactions: transactions.get() }),
      });
      const platform = platformStream();
      // A failure of the platform broker is said as such, not as one of the database's.
      const onBroker = <T>(doing: string, p: Promise<T>): Promise<T> =>
        p.catch((e: unknown) => {
          if (e instanceof SystemFailure) throw e;
          throw new SystemFailure(
            `${doing} on the platform stream broker failed: ${describeKafkaFailure(e, platform.brokers.join(','))}`,
            { cause: e },
          );
        });
      try {
        const positions = await onBroker(
          'Opening the position topic',
          positionStore(platform, config.connector_id, publisher.producer),
        );
        const capture = await startMysqlCdc(
          settings,
          {
            engine,
            connectorId: config.connector_id,
            tables: models.map((d) => ({ entry: d.entry, datamodelId: d.id })),
            policy: workerOutboundPolicy(),
            onEvent: (event) => {
              events += 1;
              return onBroker('Publishing change events', publisher.onEvent(event));
            },
            flush: () => onBroker('Publishing change events', publisher.flush()),
            loadPosition: async () => {
              const p = await onBroker('Reading the recorded position', positions.read());
              // The lag a stopped worker left, measured before the stream starts reducing it.
              if (p) await binlog.measure({ read: p, needed: p });
              return p;
            },
            savePosition: (p) => onBroker('Recording the position', positions.write(p)),
            log: (level, msg, fields) => ctx.log(level, msg, fields),
            onTransaction: (commitMs) => {
              transactions.inc({}, 1);
              lag.set({}, Math.max(0, (Date.now() - commitMs) / 1000));
            },
            onCheckpoint: (p) => checkpointed.set({ file: p.file }, p.offset),
          },
          signal,
        );
        ctx.log('info', 'capturing', { tables: models.length });
        binlog.start(() => capture.positions());
        return {
          done: capture.done.finally(() => {
            binlog.stop();
            return publisher.close();
          }),
        };
      } catch (e) {
        await publisher.close();
        throw e;
      }
    },
  };
}

export const mysqlSourceEngineOf = {
  MySQL: mysqlSourceEngine('MySQL'),
  MariaDB: mysqlSourceEngine('MariaDB'),
};
