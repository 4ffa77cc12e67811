import { WORKER_METRICS } from '@sluice/shared/metrics';
import type { WorkerContext } from '../engine.js';
import { workerOutboundPolicy } from '../outbound.js';
import { positiveSetting } from '../settings.js';
import type { MysqlEngine } from '../systems/mysql/connection.js';
import { measureBinlogRetention, type BinlogRetention } from './binlog-retention.js';
import type { MysqlSourceSettings } from './mysql-cdc/contract.js';
import type { BinlogPosition } from './mysql-cdc/position.js';

/** How often the source worker reads the binary logs (SLUICE_BINLOG_RETENTION_INTERVAL_MS, default 15 s). */
export function binlogRetentionIntervalMs(env: NodeJS.ProcessEnv = process.env): number {
  return positiveSetting(env, 'SLUICE_BINLOG_RETENTION_INTERVAL_MS', 15_000);
}

export interface CapturePositions {
  /** Where the capture reads now. */
  read: BinlogPosition;
  /** Where a restart resumes (the position recorded last). */
  needed: BinlogPosition;
}

export interface BinlogWatch {
  /** Measures at `positions` now (before the stream starts: the lag the stopped worker left). */
  measure(positions: CapturePositions): Promise<void>;
  /** Measures at the capture's positions now and every interval, and the rates since the last time. */
  start(positions: () => CapturePositions | null): void;
  stop(): void;
}

/**
 * The binary log figures of a MySQL/MariaDB source on the worker's /metrics
 * (WORKER_METRICS.binlog*), and the change events and transactions per
 * second over each interval. A failed measurement is a warning, not the
 * capture's failure (it has its own).
 */
export function watchBinlogRetention(
  settings: MysqlSourceSettings,
  options: {
    engine: MysqlEngine;
    ctx: WorkerContext;
    /** Change events and transactions read so far. */
    counts: () => { events: number; transactions: number };
    intervalMs?: number;
  },
): BinlogWatch {
  const { ctx } = options;
  const m = ctx.metrics;
  const lag = m.gauge(
    WORKER_METRICS.binlogLagBytes,
    "Bytes of binary log between the capture's read position and the server's current position",
  );
  const held = m.gauge(WORKER_METRICS.binlogHeldBytes, 'Bytes of the binary logs the server holds');
  const before = m.gauge(
    WORKER_METRICS.binlogLogsBeforeNeeded,
    'Binary logs the server holds older than the one the recorded position needs (-1: that one is purged)',
  );
  const expire = m.gauge(
    WORKER_METRICS.binlogExpireSeconds,
    'Age after which the server purges a binary log (binlog_expire_logs_seconds or expire_logs_days; 0: never)',
  );
  const eventsRate = m.gauge(WORKER_METRICS.sourceEventsRate, 'Change events read per second');
  const transactionsRate = m.gauge(
    WORKER_METRICS.sourceTransactionsRate,
    'Committed transactions read from the binary log per second',
  );
  const failures = m.counter(
    'sluice_source_binlog_measure_errors_total',
    'Failed readings of the binary logs the server holds',
  );
  const policy = workerOutboundPolicy();
  const record = (r: BinlogRetention) => {
    lag.set({}, r.lagBytes);
    held.set({}, r.heldBytes);
    before.clear();
    before.set(
      { needed_file: r.neededFile, oldest_file: r.oldestFile, current_file: r.currentFile },
      r.logsBeforeNeeded,
    );
    expire.set({}, r.expireSeconds);
  };
  const measure = async (positions: CapturePositions) => {
    try {
      record(await measureBinlogRetention(settings, positions, { engine: options.engine, policy }));
    } catch (e) {
      failures.inc();
      ctx.log('warn', 'reading the binary logs the server holds failed', {
        reason: e instanceof Error ? e.message : String(e),
      });
    }
  };
  let last = { ...options.counts(), at: Date.now() };
  const rates = () => {
    const now = { ...options.counts(), at: Date.now() };
    const seconds = (now.at - last.at) / 1000;
    if (seconds > 0) {
      eventsRate.set({}, Math.round(((now.events - last.events) / seconds) * 10) / 10);
      transactionsRate.set({}, Math.round(((now.transactions - last.transactions) / seconds) * 10) / 10);
    }
    last = now;
  };
  let timer: NodeJS.Timeout | undefined;
  let busy = false;
  return {
    measure,
    start(positions) {
      const tick = async () => {
        rates();
        const p = positions();
        if (busy || !p) return;
        busy = true;
        await measure(p).finally(() => (busy = false));
      };
      timer = setInterval(() => void tick(), options.intervalMs ?? binlogRetentionIntervalMs());
    },
    stop: () => clearInterval(timer),
  };
}
