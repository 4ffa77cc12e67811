import type {
  ClusterObject,
  ClusterPort,
  ConnectorResource,
  DataModelResource,
  PipelineResource,
  SluiceKind,
  SubscriptionResource,
  SecretStorePort,
  WorkerRuntimePort,
} from '@sluice/shared';
import { workerId } from '@sluice/shared';
import { MonitoringCollector } from '../monitoring/monitoring-collector.js';
import { planConnector, type ConnectorInput } from '../reconcile/connector.js';
import { captureReleaseTimeoutMs } from '../reconcile/capture-release.js';
import { slotWalDegradedBytes } from '../reconcile/slot-retention.js';
import { planPart } from '../reconcile/part.js';
import { planPipeline } from '../reconcile/pipeline.js';
import type { Plan } from '../reconcile/actions.js';
import type { StandaloneReconciler } from '../reconcile/reconciler.js';
import { warehouseReconciler } from '../reconcile/warehouse.js';
import { runWorkers, WorkQueue } from '../work-queue.js';
import type { EventRecorder } from './events.js';
import { execute } from './executor.js';
import { InformerSet } from './informer-set.js';
import { RefIndex } from './ref-index.js';
import type { Logger } from './logger.js';
import type { WarehouseTesterOptions } from './warehouse-tester.js';

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

const KINDS = ['Connector', 'DataModel', 'Subscription', 'Pipeline'] as const satisfies readonly SluiceKind[];
type Kind = (typeof KINDS)[number];

/**
 * The operator's control loop: an informer per kind feeds a rate-limited
 * queue of `Kind/namespace/name` keys; a reconcile reads the caches and the
 * worker runtime, asks the pure planner of its kind what to do, and lets the
 * executor do it. A change to one object also queues the objects whose plan
 * reads it (a data model → its connector, a connector → its pipelines and
 * the targets reading from it, a pipeline → its connectors and subscription,
 * whose effective state it decides), and every worker change queues its
 * connector. The operator writes status and metadata, never a spec.
 */
export class Controller {
  private readonly queue = new WorkQueue();
  private readonly informers: Record<Kind, InformerSet>;
  /** The kinds whose plan reads their own object only, with their informers (reconciler.ts). */
  private readonly standalone = new Map<
    SluiceKind,
    { reconciler: StandaloneReconciler; informer: InformerSet }
  >();
  private readonly now: () => string;
  private readonly slotWalDegradedBytes: number;
  /** Who references whom, so a change finds its dependants without scanning a cache. */
  private readonly index = {
    pipelines: new RefIndex(),
    datamodels: new RefIndex(),
    subscriptions: new RefIndex(),
  };

  constructor(private readonly options: ControllerOptions) {
    this.now = options.now ?? (() => new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'));
    this.slotWalDegradedBytes = options.slotWalDegradedBytes ?? slotWalDegradedBytes();
    const clusterFor = options.clusterFor ?? (() => options.cluster);
    const make = (kind: SluiceKind, onChange: (o: ClusterObject, deleted: boolean) => void) =>
      new InformerSet(kind, options.namespaces, clusterFor, onChange, options.log);
    const standalone = options.warehouses ? [warehouseReconciler as StandaloneReconciler] : [];
    for (const reconciler of standalone) {
      const informer = make(reconciler.kind, (o) => this.enqueue(reconciler.kind, o));
      this.standalone.set(reconciler.kind, { reconciler, informer });
    }
    const linked = (kind: Kind) => make(kind, (o, deleted) => this.changed(kind, o, deleted));
    this.informers = {
      Connector: linked('Connector'),
      DataModel: linked('DataModel'),
      Subscription: linked('Subscription'),
      Pipeline: linked('Pipeline'),
    };
  }

  /** Runs until `signal` aborts; workers keep running (the next leader adopts them). */
  async run(signal: AbortSignal): Promise<void> {
    const { runtime, log } = this.options;
    const unsubscribe = runtime.subscribe((id) => this.workerChanged(id));
    const all = [...Object.values(this.informers), ...[...this.standalone.values()].map((s) => s.informer)];
    const informers = all.map((i) => i.run(signal));
    const resync = setInterval(() => this.enqueueAll(), this.options.resyncMs ?? 5 * 60_000);
    signal.addEventListener('abort', () => this.queue.shutDown(), { once: true });
    await Promise.all(all.map((i) => i.synced));
    log.info({}, 'operator caches synced; reconciling');
    const monitoring = this.startMonitoring(signal);
    try {
      await runWorkers(this.queue, this.options.concurrency ?? 4, (key) => this.reconcile(key), {
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
    const values = <T>(kind: Kind) => [...this.informers[kind].values()] as T[];
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
    return this.informerOf(kind)?.get(`${namespace}/${name}`);
  }

  private informerOf(kind: SluiceKind): InformerSet | undefined {
    return (
      (this.informers as Partial<Record<SluiceKind, InformerSet>>)[kind] ??
      this.standalone.get(kind)?.informer
    );
  }

  private enqueueAll(): void {
    for (const kind of KINDS) for (const o of this.informers[kind].values()) this.enqueue(kind, o);
    for (const [kind, { informer }] of this.standalone)
      for (const o of informer.values()) this.enqueue(kind, o);
  }

  private enqueue(kind: SluiceKind, o: { metadata: { namespace: string; name: string } }): void {
    this.queue.add(`${kind}/${o.metadata.namespace}/${o.metadata.name}`);
  }

  private find<T extends ClusterObject>(kind: Kind, ns: string, name: string | undefined): T | undefined {
    return name === undefined ? undefined : (this.informers[kind].get(`${ns}/${name}`) as T | undefined);
  }

  /** The objects of `kind` whose index entry references `ref` (`Kind/ns/name`). */
  private referencing<T extends ClusterObject>(index: RefIndex, kind: Kind, ref: string): T[] {
    return index.get(ref).flatMap((key) => {
      const o = this.informers[kind].get(key);
      return o ? [o as T] : [];
    });
  }

  /** Keeps the reference indexes current, then queues the object and those whose plan reads it. */
  private changed(kind: Kind, o: ClusterObject, deleted: boolean): void {
    const ns = o.metadata.namespace;
    const key = `${ns}/${o.metadata.name}`;
    const ref = (k: Kind, name: string) => `${k}/${ns}/${name}`;
    if (kind === 'Pipeline') {
      const p = o as PipelineResource;
      this.index.pipelines.set(
        key,
        deleted
          ? []
          : [
              ref('Connector', p.spec.sourceConnectorId),
              ref('Connector', p.spec.targetConnectorId),
              ref('Subscription', p.spec.subscriptionId),
            ],
      );
    } else if (kind === 'DataModel') {
      const d = o as DataModelResource;
      this.index.datamodels.set(key, deleted ? [] : [ref('Connector', d.spec.connectorId)]);
    } else if (kind === 'Subscription') {
      const s = o as SubscriptionResource;
      this.index.subscriptions.set(
        key,
        deleted ? [] : [ref('Connector', s.spec.targetConnectorId), ref('DataModel', s.spec.datamodelId)],
      );
    }

    this.enqueue(kind, o);
    const self = ref(kind, o.metadata.name);
    if (kind === 'Pipeline') {
      // Its parts' effective state reads its spec (and a deleted pipeline no longer counts).
      const p = o as PipelineResource;
      for (const c of [p.spec.sourceConnectorId, p.spec.targetConnectorId])
        this.queue.add(`Connector/${ns}/${c}`);
      this.queue.add(`Subscription/${ns}/${p.spec.subscriptionId}`);
    }
    if (kind === 'Connector') {
      for (const p of this.referencing(this.index.pipelines, 'Pipeline', self)) this.enqueue('Pipeline', p);
      for (const s of this.referencing(this.index.subscriptions, 'Subscription', self)) {
        this.enqueue('Subscription', s);
      }
      for (const d of this.referencing<DataModelResource>(this.index.datamodels, 'DataModel', self)) {
        this.enqueue('DataModel', d);
        // Targets reading from this source wait for it to be live.
        for (const s of this.referencing<SubscriptionResource>(
          this.index.subscriptions,
          'Subscription',
          ref('DataModel', d.metadata.name),
        )) {
          this.queue.add(`Connector/${ns}/${s.spec.targetConnectorId}`);
        }
      }
    } else if (kind === 'DataModel') {
      const d = o as DataModelResource;
      this.queue.add(`Connector/${ns}/${d.spec.connectorId}`);
      for (const s of this.referencing<SubscriptionResource>(
        this.index.subscriptions,
        'Subscription',
        self,
      )) {
        this.queue.add(`Connector/${ns}/${s.spec.targetConnectorId}`);
      }
    } else if (kind === 'Subscription') {
      const s = o as SubscriptionResource;
      this.queue.add(`Connector/${ns}/${s.spec.targetConnectorId}`);
      for (const p of this.referencing(this.index.pipelines, 'Pipeline', self)) this.enqueue('Pipeline', p);
    }
  }

  /** A worker id is its connector's `namespace/name`, so this is the connector's key. */
  private workerChanged(id: string): void {
    this.queue.add(`Connector/${id}`);
  }

  private async reconcile(key: string): Promise<{ requeueAfter: number } | undefined> {
    const [kind, ns, name] = key.split('/') as [Kind, string, string];
    const standalone = this.standalone.get(kind);
    const object = standalone ? standalone.informer.get(`${ns}/${name}`) : this.find(kind, ns, name);
    let plan: Plan;
    if (standalone) {
      if (!object) return undefined;
      plan = standalone.reconciler.plan(object);
    } else if (kind === 'Connector') {
      const input = await this.connectorInput(ns, name, object as ConnectorResource | undefined);
      if (!input) return undefined;
      plan = planConnector(input);
    } else if (!object) {
      return undefined;
    } else if (kind === 'Pipeline') {
      const p = object as PipelineResource;
      plan = planPipeline({
        pipeline: p,
        source: this.find('Connector', ns, p.spec.sourceConnectorId),
        target: this.find('Connector', ns, p.spec.targetConnectorId),
        subscription: this.find('Subscription', ns, p.spec.subscriptionId),
        slotWalDegradedBytes: this.slotWalDegradedBytes,
        now: this.now(),
      });
    } else if (kind === 'DataModel') {
      const d = object as DataModelResource;
      plan = planPart(d, this.find('Connector', ns, d.spec.connectorId), this.now());
    } else {
      const s = object as SubscriptionResource;
      plan = planPart(
        s,
        this.find('Connector', ns, s.spec.targetConnectorId),
        this.now(),
        this.pipelinesOf('Subscription', ns, name),
      );
    }
    await execute(plan.actions, {
      ...this.options,
      now: this.now,
      observe: (o) => this.informerOf(o.kind)?.observe(o),
    });
    return plan.requeueAfterMs !== undefined ? { requeueAfter: plan.requeueAfterMs } : undefined;
  }

  /** The pipelines that reference the object `kind/ns/name` (a connector or a subscription). */
  private pipelinesOf(kind: 'Connector' | 'Subscription', ns: string, name: string): PipelineResource[] {
    return this.referencing<PipelineResource>(this.index.pipelines, 'Pipeline', `${kind}/${ns}/${name}`);
  }

  private async connectorInput(
    ns: string,
    name: string,
    connector: ConnectorResource | undefined,
  ): Promise<ConnectorInput | undefined> {
    const id = workerId(ns, name);
    const worker = await this.options.runtime.observe(id);
    if (!connector) {
      // Gone without our finalizer (deleted before the operator ever saw it): its worker must go too.
      if (worker) await this.options.runtime.stop(id);
      return undefined;
    }
    const self = `Connector/${ns}/${name}`;
    const datamodels = this.referencing<DataModelResource>(this.index.datamodels, 'DataModel', self);
    const subscriptions = this.referencing<SubscriptionResource>(
      this.index.subscriptions,
      'Subscription',
      self,
    )
      .filter((s) => s.spec.targetConnectorId === name)
      .flatMap((subscription) => {
        const datamodel = this.find<DataModelResource>('DataModel', ns, subscription.spec.datamodelId);
        const source = datamodel && this.find<ConnectorResource>('Connector', ns, datamodel.spec.connectorId);
        const pipelines = this.pipelinesOf('Subscription', ns, subscription.metadata.name);
        return datamodel && source ? [{ subscription, datamodel, source, pipelines }] : [];
      });
    const { secretNamespace, homeNamespace } = this.options;
    return {
      connector,
      datamodels,
      subscriptions,
      pipelines: this.pipelinesOf('Connector', ns, name),
      worker,
      ...(secretNamespace !== undefined ? { secretNamespace } : {}),
      ...(homeNamespace !== undefined ? { homeNamespace } : {}),
      slotWalDegradedBytes: this.slotWalDegradedBytes,
      captureReleaseTimeoutMs: this.options.captureReleaseTimeoutMs ?? captureReleaseTimeoutMs(),
      now: this.now(),
    };
  }
}
