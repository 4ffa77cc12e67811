import type { WorkerContext } from '../engine.js';
import { workerOutboundPolicy } from '../outbound.js';
import type { PostgresSourceSettings } from './postgres-cdc/contract.js';
import { positiveSetting } from '../settings.js';
import { measureSlotRetention } from './slot-retention.js';
import { WORKER_METRICS } from '@sluice/shared/metrics';

/** How often the source worker measures its slot (SLUICE_SLOT_RETENTION_INTERVAL_MS, default 15 s). */
export function slotRetentionIntervalMs(env: NodeJS.ProcessEnv = process.env): number {
  return positiveSetting(env, 'SLUICE_SLOT_RETENTION_INTERVAL_MS', 15_000);
}

/**
 * Measures the slot now and every interval into the gauge
 * `sluice_source_slot_retained_wal_bytes{slot}`; returns the stop. A failed
 * measurement is a warning, not the capture's failure (it has its own).
 */
export function watchSlotRetention(
  settings: PostgresSourceSettings,
  options: { connectorId: string; ctx: WorkerContext; intervalMs?: number },
): () => void {
  const { ctx } = options;
  const gauge = ctx.metrics.gauge(
    WORKER_METRICS.slotRetainedWal,
    'WAL the source server retains for the replication slot (pg_current_wal_lsn() - restart_lsn)',
  );
  const failures = ctx.metrics.counter(
    'sluice_source_slot_measure_errors_total',
    'Failed measurements of the replication slot',
  );
  const policy = workerOutboundPolicy();
  let busy = false;
  const measure = async () => {
    if (busy) return;
    busy = true;
    try {
      const r = await measureSlotRetention(settings, { connectorId: options.connectorId, policy });
      if (r.retainedWalBytes !== null) gauge.set({ slot: r.slot }, r.retainedWalBytes);
    } catch (e) {
      failures.inc();
      ctx.log('warn', 'measuring the replication slot failed', {
        reason: e instanceof Error ? e.message : String(e),
      });
    } finally {
      busy = false;
    }
  };
  void measure();
  const timer = setInterval(() => void measure(), options.intervalMs ?? slotRetentionIntervalMs());
  return () => clearInterval(timer);
}
