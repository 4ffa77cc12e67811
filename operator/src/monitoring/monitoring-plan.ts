import { isDeepStrictEqual } from 'node:util';
import type {
  BinlogStatus,
  ConnectorResource,
  DataModelResource,
  Monitoring,
  PipelineResource,
  SubscriptionResource,
} from '@sluice/shared/catalog';
import type { Action, ObjectRef } from '../reconcile/actions.js';
import { histogramQuantile, mergeBuckets } from './histogram-quantile.js';
import type { BinlogFigures, WorkerFigures } from './worker-figures.js';

// The monitoring collector's pure half: from what the workers' /metrics say
// now (and said at the last read), the status.monitoring of each data model,
// subscription and pipeline, the replication slot of each PostgreSQL
// source and the binary logs of each MySQL/MariaDB source — as patchStatus
// actions, only for what changed.
//
// Counters accumulate across worker restarts: each read adds what a worker
// counted since the previous read of the same worker run. A run read for the
// first time adds everything it counted when it started after the object's
// last report, else nothing (the operator restarted: those messages were
// reported by the previous leader). Latency quantiles are those of the
// current worker runs' histograms (kept as they were while no worker runs).

export interface ScrapedWorker {
  figures: WorkerFigures;
  /** The last read of the same run (same start time); undefined: first read of this run. */
  previous?: WorkerFigures;
}

export interface MonitoringInput {
  connectors: readonly ConnectorResource[];
  datamodels: readonly DataModelResource[];
  subscriptions: readonly SubscriptionResource[];
  pipelines: readonly PipelineResource[];
  /** Scraped workers by connector key `namespace/name`. */
  workers: ReadonlyMap<string, ScrapedWorker>;
  /** The Degraded threshold of retained WAL: crossing it is always written, however small the change. */
  slotWalDegradedBytes: number;
  now: string;
}

/** Retained WAL moves all the time; smaller changes than this are not worth a status write. */
export function walChanged(before: number | undefined, after: number, threshold: number): boolean {
  if (before === undefined) return true;
  if (before > threshold !== after > threshold) return true;
  return Math.abs(after - before) >= Math.max(64 * 1024, before * 0.01);
}

/**
 * Whether a binary log measurement is worth a status write: the logs named
 * or the count before the needed one moved (what the purge guard judges),
 * or the lag, the bytes held or a rate moved enough.
 */
export function binlogChanged(before: BinlogStatus | undefined, after: BinlogFigures): boolean {
  if (!before) return true;
  const { lagBytes, heldBytes, eventsPerSecond, transactionsPerSecond, ...named } = after;
  const { lagBytes: lagBefore, heldBytes: heldBefore, ...namedBefore } = before;
  for (const [k, v] of Object.entries(named))
    if (namedBefore[k as keyof typeof namedBefore] !== v) return true;
  // Caught up (0) or not is always news; else a change of a hundredth, at least 4 KiB.
  const bytes = (a: number, b: number) =>
    (a === 0) !== (b === 0) || Math.abs(b - a) >= Math.max(4096, a * 0.01);
  const rate = (a: number | undefined, b: number | undefined) =>
    (a ?? 0) !== (b ?? 0) && Math.abs((a ?? 0) - (b ?? 0)) >= Math.max(1, (a ?? 0) * 0.1);
  return (
    bytes(lagBefore, lagBytes) ||
    bytes(heldBefore, heldBytes) ||
    rate(before.eventsPerSecond, eventsPerSecond) ||
    rate(before.transactionsPerSecond, transactionsPerSecond)
  );
}

type Getter = (f: WorkerFigures) => number;
interface Part {
  worker: string;
  get: Getter;
}
interface Sources {
  messagesIn: Part[];
  messagesOut: Part[];
  errors: Part[];
  lastEvent: Part[];
  /** (worker, subscription) whose latency histograms count. */
  latency: { worker: string; subscription: string }[];
  slotWorker?: string;
}

const key = (o: { metadata: { namespace: string } }, name: string) => `${o.metadata.namespace}/${name}`;
const ref = (o: { kind: ObjectRef['kind']; metadata: { namespace: string; name: string } }): ObjectRef => ({
  kind: o.kind,
  namespace: o.metadata.namespace,
  name: o.metadata.name,
});

function subscriptionSources(s: SubscriptionResource): Sources {
  const worker = key(s, s.spec.targetConnectorId);
  const id = s.metadata.name;
  return {
    messagesIn: [{ worker, get: (f) => f.consumed[id] ?? 0 }],
    messagesOut: [{ worker, get: (f) => f.confirmed[id] ?? 0 }],
    errors: [{ worker, get: (f) => f.errors[id] ?? 0 }],
    lastEvent: [{ worker, get: (f) => f.lastEventMs[id] ?? 0 }],
    latency: [{ worker, subscription: id }],
  };
}

function datamodelSources(d: DataModelResource, subs: readonly SubscriptionResource[]): Sources {
  const source = key(d, d.spec.connectorId);
  const id = d.metadata.name;
  const delivered = subs.map(subscriptionSources);
  return {
    messagesIn: [{ worker: source, get: (f) => f.published[id] ?? 0 }],
    messagesOut: delivered.flatMap((s) => s.messagesOut),
    errors: delivered.flatMap((s) => s.errors),
    // A Kafka source reports no event times: its deliveries' then count.
    lastEvent: [
      { worker: source, get: (f) => f.sourceLastEventMs[id] ?? 0 },
      ...delivered.flatMap((s) => s.lastEvent),
    ],
    latency: delivered.flatMap((s) => s.latency),
    slotWorker: source,
  };
}

function pipelineSources(p: PipelineResource, sub: SubscriptionResource | undefined): Sources {
  const source = key(p, p.spec.sourceConnectorId);
  const dm = p.spec.datamodelId;
  const delivered = sub ? subscriptionSources(sub) : undefined;
  return {
    messagesIn: [{ worker: source, get: (f) => f.published[dm] ?? 0 }],
    messagesOut: delivered?.messagesOut ?? [],
    errors: delivered?.errors ?? [],
    lastEvent: delivered?.lastEvent ?? [],
    latency: delivered?.latency ?? [],
    slotWorker: source,
  };
}

/** The object's next monitoring, or undefined when none of its workers was read. */
export function nextMonitoring(
  current: Monitoring | undefined,
  sources: Sources,
  workers: ReadonlyMap<string, ScrapedWorker>,
  now: string,
): Monitoring | undefined {
  const involved = [...sources.messagesIn, ...sources.messagesOut, ...sources.errors, ...sources.latency].map(
    (p) => p.worker,
  );
  if (sources.slotWorker) involved.push(sources.slotWorker);
  if (!involved.some((w) => workers.has(w))) return undefined;
  const reportedMs = current ? Date.parse(current.reportedAt) : -Infinity;
  const delta = (parts: Part[]) =>
    parts.reduce((sum, { worker, get }) => {
      const w = workers.get(worker);
      if (!w) return sum;
      if (w.previous) return sum + Math.max(0, get(w.figures) - get(w.previous));
      return (w.figures.startedAtMs ?? 0) > reportedMs ? sum + get(w.figures) : sum;
    }, 0);
  const next: Monitoring = {
    messagesIn: (current?.messagesIn ?? 0) + delta(sources.messagesIn),
    messagesOut: (current?.messagesOut ?? 0) + delta(sources.messagesOut),
    errors: (current?.errors ?? 0) + delta(sources.errors),
    reportedAt: now,
  };
  const lastMs = Math.max(
    current?.lastEventTime ? Date.parse(current.lastEventTime) : 0,
    ...sources.lastEvent.map(({ worker, get }) => {
      const w = workers.get(worker);
      return w ? get(w.figures) : 0;
    }),
  );
  if (lastMs > 0) next.lastEventTime = new Date(Math.floor(lastMs)).toISOString();
  const buckets = mergeBuckets(
    sources.latency.flatMap(({ worker, subscription }) => {
      const list = workers.get(worker)?.figures.latency[subscription];
      return list ? [list] : [];
    }),
  );
  const samples = buckets.find((b) => b.le === Infinity)?.count ?? 0;
  const ms = (q: number) => Math.round((histogramQuantile(q, buckets) ?? 0) * 1000 * 10) / 10;
  if (samples > 0) next.latencyMs = { p50: ms(0.5), p95: ms(0.95), p99: ms(0.99), samples };
  else if (current?.latencyMs) next.latencyMs = current.latencyMs;
  const slot = sources.slotWorker ? workers.get(sources.slotWorker)?.figures.slot : undefined;
  if (slot) next.retainedWalBytes = slot.retainedWalBytes;
  else if (current?.retainedWalBytes !== undefined) next.retainedWalBytes = current.retainedWalBytes;
  return next;
}

/** Whether `next` says something `current` did not (the report time alone is not news). */
function changed(current: Monitoring | undefined, next: Monitoring, threshold: number): boolean {
  if (!current) return true;
  const { reportedAt: _a, retainedWalBytes: walA, ...a } = current;
  const { reportedAt: _b, retainedWalBytes: walB, ...b } = next;
  if (!isDeepStrictEqual(a, b)) return true;
  return walB !== undefined && walChanged(walA, walB, threshold);
}

/** The status writes of one collection round. */
export function planMonitoring(input: MonitoringInput): Action[] {
  const { workers, now, slotWalDegradedBytes: threshold } = input;
  const actions: Action[] = [];
  const emit = (
    o: (DataModelResource | SubscriptionResource | PipelineResource) & {
      status?: { monitoring?: Monitoring };
    },
    sources: Sources,
  ) => {
    if (o.metadata.deletionTimestamp) return;
    const current = o.status?.monitoring;
    const next = nextMonitoring(current, sources, workers, now);
    if (next && changed(current, next, threshold)) {
      actions.push({ type: 'patchStatus', ref: ref(o), status: { monitoring: next } });
    }
  };
  const subsOf = new Map<string, SubscriptionResource[]>();
  for (const s of input.subscriptions) {
    const k = key(s, s.spec.datamodelId);
    subsOf.set(k, [...(subsOf.get(k) ?? []), s]);
  }
  const subByKey = new Map(input.subscriptions.map((s) => [key(s, s.metadata.name), s]));
  for (const d of input.datamodels) emit(d, datamodelSources(d, subsOf.get(key(d, d.metadata.name)) ?? []));
  for (const s of input.subscriptions) emit(s, subscriptionSources(s));
  for (const p of input.pipelines) emit(p, pipelineSources(p, subByKey.get(key(p, p.spec.subscriptionId))));
  for (const c of input.connectors) {
    const binlog = workers.get(key(c, c.metadata.name))?.figures.binlog;
    if (binlog && !c.metadata.deletionTimestamp && binlogChanged(c.status?.binlog, binlog)) {
      actions.push({ type: 'patchStatus', ref: ref(c), status: { binlog: { ...binlog, measuredAt: now } } });
    }
    const slot = workers.get(key(c, c.metadata.name))?.figures.slot;
    if (!slot || c.metadata.deletionTimestamp) continue;
    const before = c.status?.replicationSlot;
    if (before?.name === slot.name && !walChanged(before.retainedWalBytes, slot.retainedWalBytes, threshold))
      continue;
    actions.push({
      type: 'patchStatus',
      ref: ref(c),
      status: {
        replicationSlot: { name: slot.name, retainedWalBytes: slot.retainedWalBytes, measuredAt: now },
      },
    });
  }
  return actions;
}
