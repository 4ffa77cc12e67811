import type {
  ClusterObject,
  ClusterPort,
  SecretStorePort,
  SluiceKind,
  WorkerRuntimePort,
} from '@sluice/shared/ports';
import { MonitoringCollector } from '../monitoring/monitoring-collector.js';
import type { ObjectRef } from '../reconcile/actions.js';
import { captureReleaseTimeoutMs } from '../reconcile/connector/capture-release.js';
import { refKey, type CacheView, type Reconciler } from '../reconcile/reconciler.js';
import { kindReconcilers } from '../reconcile/reconcilers.js';
import { slotWalDegradedBytes } from '../reconcile/slot-retention.js';
import type { WarehouseTesterOptions } from '../reconcile/warehouse/warehouse.tester.js';
import { runWorkers, WorkQueue } from '../work-queue.js';
import type { EventRecorder } from './events.js';
import { execute } from './executor.js';
import { InformerSet } from './informer-set.js';
import type { Logger } from './logger.js';
import { RefIndex } from './ref-index.js';

export interface ControllerOptions {
  cluster: ClusterPort;
  runtime: WorkerRuntimePort;
  events: EventRecorder;
  log: Logger;
  /** Only these namespaces (a Role-scoped install); unset: all. */
  namespaces?: readonly string[];
  /**
   * The cluster adapter that lists and watches one namespace (undefined: all);
   * default `cluster`. A Kubernetes adapter scoped to each namespace keeps
   * every list and watch within what a Role allows.
   */
  clusterFor?: (namespace: string | undefined) => ClusterPort;
  /** Where managed Secrets are deleted when their connector is (the worker namespace). */
  secrets?: Pick<SecretStorePort, 'delete'>;
  secretNamespace?: string;
  /** The control plane's namespace, whose connectors own `sluice-connector-<name>` (default `secretNamespace`). */
  homeNamespace?: string;
  /** Reconciles running at once (different keys). */
  concurrency?: number;
  /** Every object is reconciled again this often, whatever happened (safety net). */
  resyncMs?: number;
  /**
   * How often the monitoring collector reads the workers' /metrics
   * (SLUICE_MONITORING_INTERVAL_MS, default 15 s); 0 turns it off.
   */
  monitoringIntervalMs?: number;
  /** Retained WAL of a replication slot past which connector and pipelines are Degraded (SLUICE_SLOT_WAL_DEGRADED_BYTES, 1 GiB). */
  slotWalDegradedBytes?: number;
  /** How long a PostgreSQL source being deleted waits for the gateway to drop its slot (SLUICE_CAPTURE_RELEASE_TIMEOUT_MS, 2 min). */
  captureReleaseTimeoutMs?: number;
  /**
   * How Warehouses are tested (outbound policy, secret store); unset, the
   * controller does not watch Warehouses (the operator process and the
   * embedded operator always set it).
   */
  warehouses?: WarehouseTesterOptions;
  now?: () => string;
}

/** A registered kind: its reconciler, its informers, and who of its objects references whom. */
interface Registered {
  reconciler: Reconciler;
  informer: InformerSet;
  /** `namespace/name` of each object of the kind → the `Kind/namespace/name` it references. */
  index: RefIndex;
}

/**
 * The operator's control loop, the same for every kind: an informer per
 * kind feeds a rate-limited queue of `Kind/namespace/name` keys, and a
 * reconcile hands the key's object and a view of the caches to its kind's
 * reconciler (reconcile/<kind>/), whose pure planner says what to do, and
 * lets the executor do it. A change to one object also queues the objects
 * whose plan reads it (its reconciler's `dependents`, found through the
 * reference index its `references` keep), and every worker change queues
 * the object that owns the worker. The operator writes status and
 * metadata, never a spec.
 */
export class Controller {
  /**
   * This run's queue. A queue shut down stays shut down (it ignores every
   * key), and a replica that loses the Lease runs again when it regains it:
   * each run has its own.
   */
  private queue = new WorkQueue();
  private readonly kinds = new Map<SluiceKind, Registered>();
  private readonly now: () => string;
  private readonly slotWalDegradedBytes: number;
  /** The caches as reconcilers read them. */
  private readonly cache: CacheView = {
    get: <T extends ClusterObject>(kind: SluiceKind, ns: string, name: string | undefined) =>
      name === undefined ? undefined : (this.kinds.get(kind)?.informer.get(`${ns}/${name}`) as T | undefined),
    referencing: <T extends ClusterObject>(kind: SluiceKind, ref: ObjectRef) => {
      const registered = this.kinds.get(kind);
      if (!registered) return [];
      return registered.index.get(refKey(ref)).flatMap((key) => {
        const o = registered.informer.get(key);
        return o ? [o as T] : [];
      });
    },
  };

  constructor(private readonly options: ControllerOptions) {
    this.now = options.now ?? (() => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'));
    this.slotWalDegradedBytes = options.slotWalDegradedBytes ?? slotWalDegradedBytes();
    const clusterFor = options.clusterFor ?? (() => options.cluster);
    const reconcilers = kindReconcilers({
      runtime: options.runtime,
      ...(options.secretNamespace !== undefined ? { secretNamespace: options.secretNamespace } : {}),
      ...(options.homeNamespace !== undefined ? { homeNamespace: options.homeNamespace } : {}),
      slotWalDegradedBytes: this.slotWalDegradedBytes,
      captureReleaseTimeoutMs: options.captureReleaseTimeoutMs ?? captureReleaseTimeoutMs(),
      warehouses: options.warehouses !== undefined,
    });
    for (const reconciler of reconcilers) {
      const informer = new InformerSet(
        reconciler.kind,
        options.namespaces,
        clusterFor,
        (o, deleted) => this.changed(reconciler.kind, o, deleted),
        options.log,
      );
      this.kinds.set(reconciler.kind, { reconciler, informer, index: new RefIndex() });
    }
  }

  /**
   * Runs until `signal` aborts; workers keep running (the next leader adopts
   * them). May run again after that (a replica that leads again).
   */
  async run(signal: AbortSignal): Promise<void> {
    const { runtime, log } = this.options;
    const queue = (this.queue = new WorkQueue());
    const unsubscribe = runtime.subscribe((id) => this.workerChanged(id));
    const all = [...this.kinds.values()].map((k) => k.informer);
    const informers = all.map((i) => i.run(signal));
    const resync = setInterval(() => this.enqueueAll(), this.options.resyncMs ?? 5 * 60_000);
    // Aborted before every list answered (the API server down), or before the
    // run began (leadership lost meanwhile): no reconcile, and the run ends.
    const aborted = new Promise<void>((resolve) => {
      const stop = (): void => {
        queue.shutDown();
        resolve();
      };
      if (signal.aborted) stop();
      else signal.addEventListener('abort', stop, { once: true });
    });
    await Promise.race([Promise.all(all.map((i) => i.synced)), aborted]);
    if (!signal.aborted) log.info({}, 'operator caches synced; reconciling');
    const monitoring = signal.aborted ? Promise.resolve() : this.startMonitoring(signal);
    try {
      await runWorkers(queue, this.options.concurrency ?? 4, (key) => this.reconcile(key), {
        onError: (err, key) =>
          log.warn({ key, err: (err as Error).message }, 'reconcile failed; retrying with back-off'),
      });
    } finally {
      clearInterval(resync);
      unsubscribe();
      await Promise.all([...informers, monitoring]);
    }
  }

  /** The monitoring collector over the caches, while this controller runs (the leader's). */
  private startMonitoring(signal: AbortSignal): Promise<void> {
    const intervalMs = this.options.monitoringIntervalMs ?? 15_000;
    if (intervalMs <= 0) return Promise.resolve();
    const values = <T>(kind: SluiceKind) => [...(this.kinds.get(kind)?.informer.values() ?? [])] as T[];
    return new MonitoringCollector({
      cluster: this.options.cluster,
      runtime: this.options.runtime,
      log: this.options.log,
      intervalMs,
      slotWalDegradedBytes: this.slotWalDegradedBytes,
      now: this.now,
      catalog: () => ({
        connectors: values('Connector'),
        datamodels: values('DataModel'),
        subscriptions: values('Subscription'),
        pipelines: values('Pipeline'),
      }),
    }).run(signal);
  }

  /** The caches' view (tests and the operator's health endpoint). */
  get(kind: SluiceKind, namespace: string, name: string): ClusterObject | undefined {
    return this.cache.get(kind, namespace, name);
  }

  private enqueueAll(): void {
    for (const [kind, { informer }] of this.kinds) {
      for (const o of informer.values())
        this.enqueue({ kind, namespace: o.metadata.namespace, name: o.metadata.name });
    }
  }

  private enqueue(ref: ObjectRef): void {
    this.queue.add(refKey(ref));
  }

  /** Keeps the reference index current, then queues the object and those whose plan reads it. */
  private changed(kind: SluiceKind, o: ClusterObject, deleted: boolean): void {
    const { reconciler, index } = this.kinds.get(kind) as Registered;
    const ref: ObjectRef = { kind, namespace: o.metadata.namespace, name: o.metadata.name };
    if (reconciler.references) {
      index.set(`${ref.namespace}/${ref.name}`, deleted ? [] : reconciler.references(o).map(refKey));
    }
    this.enqueue(ref);
    for (const dependent of reconciler.dependents?.(o, this.cache) ?? []) this.enqueue(dependent);
  }

  /** A worker id is its owner's `namespace/name`, so this is its owner's key. */
  private workerChanged(id: string): void {
    for (const { reconciler } of this.kinds.values()) {
      if (reconciler.ownsWorkers) this.queue.add(`${reconciler.kind}/${id}`);
    }
  }

  private async reconcile(key: string): Promise<{ requeueAfter: number } | undefined> {
    const [kind, namespace, name] = key.split('/') as [SluiceKind, string, string];
    const registered = this.kinds.get(kind);
    if (!registered) return undefined;
    const object = registered.informer.get(`${namespace}/${name}`);
    const plan = await registered.reconciler.reconcile({ kind, namespace, name }, object, {
      cache: this.cache,
      now: this.now(),
    });
    if (!plan) return undefined;
    await execute(plan.actions, {
      ...this.options,
      now: this.now,
      observe: (o) => this.kinds.get(o.kind)?.informer.observe(o),
    });
    return plan.requeueAfterMs !== undefined ? { requeueAfter: plan.requeueAfterMs } : undefined;
  }
}
