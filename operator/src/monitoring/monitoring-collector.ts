import {
  type ConnectorResource,
  type DataModelResource,
  type PipelineResource,
  type SubscriptionResource,
} from '@sluice/shared/catalog';
import { NotFoundError, type ClusterPort, type WorkerRuntimePort } from '@sluice/shared/ports';
import { abortableSleep } from '@sluice/shared/util';
import type { Logger } from '../controller/logger.js';
import { planMonitoring, type ScrapedWorker } from './monitoring-plan.js';
import { parsePrometheusText } from './prometheus-text.js';
import { emptyFigures, sumFigures, workerFigures, type WorkerFigures } from './worker-figures.js';

// The monitoring collector: every interval, read the /metrics of each ready
// worker, and write what changed to status.monitoring (data models,
// subscriptions, pipelines) and status.replicationSlot (PostgreSQL sources)
// as merge patches of those fields alone — the reconcilers own the rest of
// the status. One round at a time, at most one write per object per round,
// nothing written when nothing changed: a busy cluster is not flooded.

export interface CatalogView {
  connectors: ConnectorResource[];
  datamodels: DataModelResource[];
  subscriptions: SubscriptionResource[];
  pipelines: PipelineResource[];
}

export interface MonitoringCollectorOptions {
  /** Where the figures are written (merge patches of status). */
  cluster: Pick<ClusterPort, 'patchStatus'>;
  /** Which workers are ready, and where each one's /metrics answers. */
  runtime: Pick<WorkerRuntimePort, 'list' | 'metricsUrl' | 'metricsUrls'>;
  /** The operator's caches. */
  catalog: () => CatalogView;
  log: Logger;
  /** SLUICE_MONITORING_INTERVAL_MS, default 15 s. */
  intervalMs: number;
  slotWalDegradedBytes: number;
  /** Deadline of one /metrics read. */
  scrapeTimeoutMs?: number;
  now?: () => string;
}

export class MonitoringCollector {
  /**
   * The last figures read from each instance of each worker (by connector
   * key, then by its /metrics address), for the deltas of the next round.
   */
  private readonly last = new Map<string, Map<string, WorkerFigures>>();
  private readonly now: () => string;
  /** Aborts reads in flight when the collector stops (a stopping leader does not wait for them). */
  private stopping: AbortSignal | undefined;

  constructor(private readonly options: MonitoringCollectorOptions) {
    this.now = options.now ?? (() => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'));
  }

  /** One round: read every ready worker, write what changed; resolves with the writes made. */
  async collect(): Promise<number> {
    const { runtime, cluster, log } = this.options;
    const observed = (await runtime.list()).filter((w) => w.phase === 'ready');
    const workers = new Map<string, ScrapedWorker>();
    await Promise.all(
      observed.map(async (w) => {
        const scraped = await this.scrapeInstances(w.id);
        if (scraped) workers.set(w.id, scraped);
      }),
    );
    const actions = planMonitoring({
      ...this.options.catalog(),
      workers,
      slotWalDegradedBytes: this.options.slotWalDegradedBytes,
      now: this.now(),
    });
    let writes = 0;
    for (const a of actions) {
      // A leader that stopped leading writes nothing more.
      if (this.stopping?.aborted) break;
      if (a.type !== 'patchStatus') continue;
      try {
        await cluster.patchStatus(a.ref.kind, a.ref.namespace, a.ref.name, a.status);
        writes++;
      } catch (err) {
        if (!(err instanceof NotFoundError))
          log.warn({ ref: a.ref, err: (err as Error).message }, 'writing monitoring figures failed');
      }
    }
    // Workers gone (stopped, failed) are forgotten; one not read this round keeps its last figures.
    const present = new Set(observed.map((w) => w.id));
    for (const id of [...this.last.keys()]) if (!present.has(id)) this.last.delete(id);
    return writes;
  }

  /** Collects every interval until `signal` aborts. */
  async run(signal: AbortSignal): Promise<void> {
    this.stopping = signal;
    while (!signal.aborted) {
      await abortableSleep(this.options.intervalMs, signal);
      if (signal.aborted) return;
      await this.collect().catch((err: unknown) =>
        this.options.log.warn({ err: (err as Error).message }, 'a monitoring round failed'),
      );
    }
  }

  /**
   * Reads every ready instance of worker `id` (one, unless a target runs
   * several replicas) and adds them up: each instance's previous read counts
   * when it is of the same run, an instance read for the first time counts
   * from zero (it started since, or was never reported). Remembers each
   * instance's figures for the next round, and forgets the instances gone.
   */
  private async scrapeInstances(id: string): Promise<ScrapedWorker | undefined> {
    const { runtime } = this.options;
    const urls = runtime.metricsUrls
      ? await runtime.metricsUrls(id)
      : [await runtime.metricsUrl(id)].filter((u): u is string => u !== undefined);
    const known = this.last.get(id) ?? new Map<string, WorkerFigures>();
    for (const url of [...known.keys()]) if (!urls.includes(url)) known.delete(url);
    this.last.set(id, known);
    const read = (
      await Promise.all(urls.map(async (url) => ({ url, figures: await this.scrape(id, url) })))
    ).flatMap((r) => (r.figures ? [{ url: r.url, figures: r.figures }] : []));
    if (read.length === 0) return undefined;
    const previous = read.map(({ url, figures }) => {
      const before = known.get(url);
      return before && before.startedAtMs === figures.startedAtMs ? before : undefined;
    });
    for (const { url, figures } of read) known.set(url, figures);
    const figures = sumFigures(read.map((r) => r.figures));
    // No instance read before in this run: the first read of a run (monitoring-plan.ts judges it).
    if (previous.every((p) => p === undefined)) return { figures };
    return { figures, previous: sumFigures(previous.map((p) => p ?? emptyFigures())) };
  }

  private async scrape(id: string, url: string): Promise<WorkerFigures | undefined> {
    try {
      const timeout = AbortSignal.timeout(this.options.scrapeTimeoutMs ?? 5000);
      const signal = this.stopping ? AbortSignal.any([this.stopping, timeout]) : timeout;
      const res = await fetch(url, { signal });
      if (!res.ok) {
        await res.body?.cancel();
        throw new Error(`HTTP ${res.status}`);
      }
      return workerFigures(parsePrometheusText(await res.text()));
    } catch (err) {
      // A worker restarting or briefly unreachable: skip it this round.
      this.options.log.debug({ worker: id, err: (err as Error).message }, 'reading worker metrics failed');
      return undefined;
    }
  }
}
