import { PassThrough } from 'node:stream';
import { createInterface } from 'node:readline';
import {
  ApiException,
  AppsV1Api,
  CoreV1Api,
  Log,
  makeInformer,
  type Informer,
  type KubeConfig,
  type KubernetesObject,
  type ObjectCache,
  type V1Deployment,
  type V1Pod,
  type V1PodTemplateSpec,
} from '@kubernetes/client-node';
import type { WorkerObservation, WorkerRuntimePort, WorkerSpec } from '@sluice/shared';
import type { Logger } from '../controller/logger.js';
import { WorkerListeners } from './worker-listeners.js';
import { observeWorker } from './worker-observation.js';
import {
  CONFIG_HASH_ANNOTATION,
  deploymentName,
  WORKER_CONTAINER,
  WORKER_ID_ANNOTATION,
  WORKER_LABEL,
  WORKER_SELECTOR,
  workerDeployment,
} from './worker-deployment.js';

// The worker runtime of a cluster: one Deployment per running connector, in
// the operator's namespace (where the chart's Secrets and the workers'
// service account are). Observations come from two informers (Deployments and
// pods carrying our labels); writes go straight to the API server. Workers
// outlive the operator: a new leader finds them in its caches and adopts them.

export interface DeploymentRuntimeOptions {
  kubeConfig: KubeConfig;
  /** Where the worker Deployments live (the release namespace). */
  namespace: string;
  /** The chart's pod template (image, service account, security context, resources). */
  podTemplate: V1PodTemplateSpec;
  log: Logger;
  /** Back-off before an informer whose watch failed starts again. */
  restartDelayMs?: number;
}

type Cache<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

export class DeploymentRuntime implements WorkerRuntimePort {
  readonly adapter = 'kubernetes' as const;
  private readonly apps: AppsV1Api;
  private readonly core: CoreV1Api;
  private readonly deployments: Cache<V1Deployment>;
  private readonly pods: Cache<V1Pod>;
  private readonly listeners = new WorkerListeners();
  private readonly started: Promise<void>;
  private closed = false;
  /**
   * Our own writes until the informer has seen them (null: deleted), so an
   * observation right after `ensure` or `stop` already reflects it.
   */
  private readonly written = new Map<string, V1Deployment | null>();

  constructor(private readonly options: DeploymentRuntimeOptions) {
    const { kubeConfig: kc, namespace } = options;
    this.apps = kc.makeApiClient(AppsV1Api);
    this.core = kc.makeApiClient(CoreV1Api);
    this.deployments = makeInformer(
      kc,
      `/apis/apps/v1/namespaces/${namespace}/deployments`,
      () => this.apps.listNamespacedDeployment({ namespace, labelSelector: WORKER_SELECTOR }),
      WORKER_SELECTOR,
    );
    this.pods = makeInformer(
      kc,
      `/api/v1/namespaces/${namespace}/pods`,
      () => this.core.listNamespacedPod({ namespace, labelSelector: WORKER_SELECTOR }),
      WORKER_SELECTOR,
    );
    // Our own write is superseded once the informer shows it or a later version.
    for (const verb of ['add', 'update'] as const) {
      this.deployments.on(verb, (d) => {
        const mine = this.written.get(d.metadata?.name ?? '');
        if (mine && !newer(mine, d)) this.written.delete(d.metadata!.name!);
      });
    }
    this.deployments.on('delete', (d) => {
      if (this.written.get(d.metadata?.name ?? '') === null) this.written.delete(d.metadata!.name!);
    });
    this.started = Promise.all([
      this.watch(this.deployments, 'deployments'),
      this.watch(this.pods, 'pods'),
    ]).then(() => undefined);
  }

  /** Starts an informer; a failed watch restarts after a pause and its relist re-notifies every worker. */
  private async watch<T extends KubernetesObject>(informer: Cache<T>, what: string): Promise<void> {
    const notify = (o: T) => {
      const id = o.metadata?.annotations?.[WORKER_ID_ANNOTATION];
      if (id) this.notify(id);
    };
    for (const verb of ['add', 'update', 'delete'] as const) informer.on(verb, notify);
    informer.on('connect', () => informer.list(this.options.namespace).forEach(notify));
    informer.on('error', (err: unknown) => {
      if (this.closed) return;
      this.options.log.warn(
        { what, err: (err as Error | undefined)?.message },
        'worker watch failed; restarting',
      );
      setTimeout(() => {
        if (!this.closed) void informer.start().catch(() => undefined);
      }, this.options.restartDelayMs ?? 5000);
    });
    await informer.start();
  }

  async ensure(spec: WorkerSpec): Promise<void> {
    await this.started;
    const { namespace } = this.options;
    const desired = workerDeployment(spec, this.options.podTemplate, namespace);
    const name = desired.metadata!.name!;
    // Read, not the cache: right after a write the cache may not show it yet.
    for (let attempt = 0; ; attempt++) {
      const current = await this.read(name);
      if (current?.metadata?.deletionTimestamp) {
        throw new Error(`the previous worker ${name} is still being deleted; retrying`);
      }
      if (current?.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] === spec.configHash) return;
      try {
        if (current) desired.metadata!.resourceVersion = current.metadata?.resourceVersion;
        const written = current
          ? await this.apps.replaceNamespacedDeployment({ name, namespace, body: desired })
          : await this.apps.createNamespacedDeployment({ namespace, body: desired });
        this.remember(name, written);
        this.notify(spec.id);
        return;
      } catch (err) {
        // Lost a race with another write: read again (bounded).
        if (status(err) !== 409 || attempt >= 3) throw err;
      }
    }
  }

  async stop(id: string): Promise<void> {
    await this.started;
    const name = deploymentName(id, this.options.namespace);
    try {
      // Background: the Deployment goes now, its pods after it; `observe`
      // says `stopping` while any pod is left.
      await this.apps.deleteNamespacedDeployment({
        name,
        namespace: this.options.namespace,
        propagationPolicy: 'Background',
      });
    } catch (err) {
      if (status(err) !== 404) throw err;
    }
    this.remember(name, null);
    this.notify(id);
  }

  async observe(id: string): Promise<WorkerObservation | undefined> {
    await this.started;
    const name = deploymentName(id, this.options.namespace);
    const deployment = this.written.has(name)
      ? (this.written.get(name) ?? undefined)
      : this.deployments.get(name, this.options.namespace);
    return observeWorker(id, deployment, this.podsOf(name));
  }

  async list(): Promise<WorkerObservation[]> {
    await this.started;
    const ids = new Set<string>();
    for (const o of [
      ...this.deployments.list(this.options.namespace),
      ...this.pods.list(this.options.namespace),
    ]) {
      const id = o.metadata?.annotations?.[WORKER_ID_ANNOTATION];
      if (id) ids.add(id);
    }
    const observed = await Promise.all([...ids].map((id) => this.observe(id)));
    return observed.filter((o): o is WorkerObservation => o !== undefined);
  }

  subscribe(listener: (id: string) => void): () => void {
    return this.listeners.subscribe(listener);
  }

  /**
   * The worker container's log through the API server (the kubelet serves it):
   * the current pod of the worker, or nothing when it has none yet.
   */
  async *logs(
    id: string,
    options: { tail?: number; follow?: boolean; signal?: AbortSignal },
  ): AsyncIterable<string> {
    await this.started;
    const name = deploymentName(id, this.options.namespace);
    const pod = this.podsOf(name)
      .filter((p) => p.spec?.nodeName)
      .sort((a, b) =>
        String(b.metadata?.creationTimestamp).localeCompare(String(a.metadata?.creationTimestamp)),
      )[0];
    if (!pod?.metadata?.name) return;
    const stream = new PassThrough();
    let abort: AbortController;
    try {
      abort = await new Log(this.options.kubeConfig).log(
        this.options.namespace,
        pod.metadata.name,
        WORKER_CONTAINER,
        stream,
        {
          follow: options.follow ?? false,
          ...(options.tail !== undefined ? { tailLines: options.tail } : {}),
        },
      );
    } catch (err) {
      this.options.log.warn({ worker: id, err: (err as Error).message }, 'worker logs unavailable');
      return;
    }
    const stop = () => {
      abort.abort();
      stream.end();
    };
    options.signal?.addEventListener('abort', stop, { once: true });
    try {
      for await (const line of createInterface({ input: stream })) yield line;
    } finally {
      options.signal?.removeEventListener('abort', stop);
      abort.abort();
    }
  }

  /** Workers outlive the operator: only the watches stop. */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([this.deployments.stop(), this.pods.stop()]);
  }

  private podsOf(deployment: string): V1Pod[] {
    return this.pods
      .list(this.options.namespace)
      .filter((p) => p.metadata?.labels?.[WORKER_LABEL] === deployment);
  }

  /** Unless the informer already has this write or a later one. */
  private remember(name: string, deployment: V1Deployment | null): void {
    const cached = this.deployments.get(name, this.options.namespace);
    if (deployment === null ? cached !== undefined : !cached || newer(deployment, cached)) {
      this.written.set(name, deployment);
    }
  }

  private async read(name: string): Promise<V1Deployment | undefined> {
    try {
      return await this.apps.readNamespacedDeployment({ name, namespace: this.options.namespace });
    } catch (err) {
      if (status(err) === 404) return undefined;
      throw err;
    }
  }

  private notify(id: string): void {
    this.listeners.notify(id);
  }
}

/** Whether `a` is a later version than `b` (resource versions are etcd revisions in practice). */
function newer(a: V1Deployment, b: V1Deployment): boolean {
  const x = Number(a.metadata?.resourceVersion);
  const y = Number(b.metadata?.resourceVersion);
  return Number.isFinite(x) && Number.isFinite(y) ? x > y : false;
}

function status(err: unknown): number | undefined {
  return err instanceof ApiException ? err.code : undefined;
}
