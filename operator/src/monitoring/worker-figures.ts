import { mergeBuckets, type Bucket } from './histogram-quantile.js';
import type { Sample } from './prometheus-text.js';
import { WORKER_METRICS } from '@sluice/shared/metrics';
import type { BinlogStatus } from '@sluice/shared/catalog';

// What one worker's /metrics say, by the ids the catalog knows: a source
// worker's figures by data model, a target worker's by subscription
// (dataplane/src: sources/*, target/metrics.ts).

type ById = Record<string, number>;

export interface WorkerFigures {
  /** sluice_worker_start_time_seconds, in ms: a new value means counters started again from 0. */
  startedAtMs?: number;
  /** Source: change events published to each data model's topic. */
  published: ById;
  /** Source: source time (ms) of the newest event, by data model. */
  sourceLastEventMs: ById;
  /** Target, by subscription: consumed, confirmed, failed messages. */
  consumed: ById;
  confirmed: ById;
  errors: ById;
  /** Target: event time (ms) of the newest confirmed event, by subscription. */
  lastEventMs: ById;
  /** Target: end-to-end latency buckets (seconds), by subscription. */
  latency: Record<string, Bucket[]>;
  /** POSTGRES_SOURCE: the slot and the WAL it retains. */
  slot?: { name: string; retainedWalBytes: number };
  /** MYSQL_SOURCE, MARIADB_SOURCE: the binary logs against the capture's positions, and its rates. */
  binlog?: BinlogFigures;
}

export type BinlogFigures = Omit<BinlogStatus, 'measuredAt'>;

/** The binary log figures, once the worker measured the logs (its logs_before_needed names them). */
function binlogFigures(samples: readonly Sample[]): BinlogFigures | undefined {
  const value = (name: string) => samples.find((s) => s.name === name)?.value;
  const files = samples.find((s) => s.name === WORKER_METRICS.binlogLogsBeforeNeeded);
  const { needed_file, oldest_file, current_file } = files?.labels ?? {};
  if (!files || !needed_file || !oldest_file || !current_file) return undefined;
  const bytes = (name: string) => Math.max(0, Math.round(value(name) ?? 0));
  const f: BinlogFigures = {
    neededFile: needed_file,
    oldestFile: oldest_file,
    currentFile: current_file,
    logsBeforeNeeded: Math.max(-1, Math.round(files.value)),
    lagBytes: bytes(WORKER_METRICS.binlogLagBytes),
    heldBytes: bytes(WORKER_METRICS.binlogHeldBytes),
    expireSeconds: bytes(WORKER_METRICS.binlogExpireSeconds),
  };
  const events = value(WORKER_METRICS.sourceEventsRate);
  const transactions = value(WORKER_METRICS.sourceTransactionsRate);
  if (events !== undefined) f.eventsPerSecond = Math.max(0, events);
  if (transactions !== undefined) f.transactionsPerSecond = Math.max(0, transactions);
  return f;
}

export function emptyFigures(): WorkerFigures {
  return {
    published: {},
    sourceLastEventMs: {},
    consumed: {},
    confirmed: {},
    errors: {},
    lastEventMs: {},
    latency: {},
  };
}

const add = (into: ById, key: string | undefined, v: number) => {
  if (key !== undefined && Number.isFinite(v)) into[key] = (into[key] ?? 0) + v;
};
const max = (into: ById, key: string | undefined, v: number) => {
  if (key !== undefined && Number.isFinite(v)) into[key] = Math.max(into[key] ?? 0, v);
};

export function workerFigures(samples: readonly Sample[]): WorkerFigures {
  const f = emptyFigures();
  for (const { name, labels, value } of samples) {
    switch (name) {
      case WORKER_METRICS.startTime:
        f.startedAtMs = value * 1000;
        break;
      case WORKER_METRICS.sourceMessages:
        add(f.published, labels.datamodel, value);
        break;
      case WORKER_METRICS.sourceLastEvent:
        max(f.sourceLastEventMs, labels.datamodel, value * 1000);
        break;
      case WORKER_METRICS.messagesIn:
        add(f.consumed, labels.subscription, value);
        break;
      case WORKER_METRICS.messagesOut:
        add(f.confirmed, labels.subscription, value);
        break;
      case WORKER_METRICS.errors:
        add(f.errors, labels.subscription, value);
        break;
      case WORKER_METRICS.lastEvent:
        max(f.lastEventMs, labels.subscription, value * 1000);
        break;
      case `${WORKER_METRICS.latency}_bucket`: {
        const sub = labels.subscription;
        if (sub === undefined || labels.le === undefined) break;
        const le = labels.le === '+Inf' ? Infinity : Number(labels.le);
        (f.latency[sub] ??= []).push({ le, count: value });
        break;
      }
      case WORKER_METRICS.slotRetainedWal:
        if (labels.slot !== undefined) f.slot = { name: labels.slot, retainedWalBytes: Math.max(0, value) };
        break;
    }
  }
  const binlog = binlogFigures(samples);
  if (binlog) f.binlog = binlog;
  return f;
}

/**
 * The figures of a worker's instances (a target of several replicas) as one:
 * counters and latency buckets added up, the newest event times, the earliest
 * start (what the first read of a run is judged by).
 */
export function sumFigures(list: readonly WorkerFigures[]): WorkerFigures {
  if (list.length === 1) return list[0] as WorkerFigures;
  const f = emptyFigures();
  for (const x of list) {
    for (const k of ['published', 'consumed', 'confirmed', 'errors'] as const) {
      for (const [id, v] of Object.entries(x[k])) add(f[k], id, v);
    }
    for (const k of ['sourceLastEventMs', 'lastEventMs'] as const) {
      for (const [id, v] of Object.entries(x[k])) max(f[k], id, v);
    }
    for (const [sub, buckets] of Object.entries(x.latency)) {
      f.latency[sub] = mergeBuckets([f.latency[sub] ?? [], buckets]);
    }
    if (x.startedAtMs !== undefined) f.startedAtMs = Math.min(f.startedAtMs ?? Infinity, x.startedAtMs);
    f.slot ??= x.slot;
    f.binlog ??= x.binlog;
  }
  return f;
}
