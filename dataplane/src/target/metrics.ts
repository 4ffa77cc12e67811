import { LATENCY_BUCKETS_S, WORKER_METRICS } from '@sluice/shared/metrics';
import type { WorkerContext } from '../engine.js';

export type TargetMetrics = ReturnType<typeof metricsOf>;

/** The target loop's metric families (a backfill registers them on a registry of its own). */
export function metricsOf(ctx: WorkerContext) {
  const r = ctx.metrics;
  return {
    // By subscription (the operator's monitoring collector adds them up per
    // data model and pipeline): a message of a topic two subscriptions of the
    // same consumer group read counts once for each.
    messagesIn: r.counter(
      WORKER_METRICS.messagesIn,
      'Messages consumed from the change streams, by topic and subscription',
    ),
    messagesOut: r.counter(
      WORKER_METRICS.messagesOut,
      'Messages whose records the target confirmed (offsets committed), by subscription',
    ),
    rowsWritten: r.counter('sluice_worker_rows_written_total', 'Rows written to the target, by table'),
    errors: r.counter(
      WORKER_METRICS.errors,
      'Failed messages and rows (not JSON, mapper errors), by subscription',
    ),
    lag: r.gauge('sluice_worker_lag_messages', 'Messages behind the end of each stream topic, by topic'),
    paused: r.gauge(
      'sluice_worker_consumption_paused',
      '1 while consumption is paused because the target is slower',
    ),
    batches: r.counter('sluice_worker_batches_total', 'Batches written to the target'),
    lastEvent: r.gauge(
      WORKER_METRICS.lastEvent,
      'Time of the newest event the target confirmed, by subscription',
    ),
    latency: r.histogram(
      WORKER_METRICS.latency,
      'From the event (emitted_ms, or the Kafka timestamp) to its confirmation by the target, by subscription',
      LATENCY_BUCKETS_S,
    ),
  };
}
