import { PassThrough, type Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import {
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
} from '@kubernetes/client-node';
import type { WorkerObservation, WorkerReaderPort } from '@sluice/shared/ports';
import type { Logger } from '../controller/logger.js';
import { WorkerListeners } from './worker-listeners.js';
import { observeWorker } from './worker-observation.js';
import {
  CONFIG_HASH_ANNOTATION,
  deploymentName,
  WORKER_CONTAINER,
  WORKER_ID_ANNOTATION,
  WORKER_LABEL,
  WORKER_PORT,
  WORKER_SELECTOR,
} from './worker-deployment.js';
import { instancesLog } from './instance-logs.js';

// The read side of the Deployment worker runtime: two informers (worker
// Deployments and pods, by our labels) and what they say — observations, the
// metrics address, the container log through the API server. It only lists,
// watches and reads (RBAC: get/list/watch on deployments and pods, get on
// pods/log), so the gateway uses it as is to serve worker logs on Kubernetes;
// DeploymentRuntime adds the writes.

export interface DeploymentWorkersOptions {
  kubeConfig: KubeConfig;
  /** Where the worker Deployments live (the worker namespace). */
  namespace: string;
  /**
   * The namespace whose connectors' workers are named without it
   * (`sluice-worker-<name>`): the control plane's, where objects are created
   * (SLUICE_NAMESPACE). Default `namespace`. The same names in any worker
   * namespace, so moving workers keeps them.
   */
  homeNamespace?: string;
  log: Logger;
  /** Back-off before an informer whose watch failed starts again. */
  restartDelayMs?: number;
}

type Cache<T extends KubernetesObject> = Informer<T> & ObjectCache<T>;

export class DeploymentWorkers implements WorkerReaderPort {
  readonly adapter = 'kubernetes' as const;
  protected readonly apps: AppsV1Api;
  protected readonly core: CoreV1Api;
  protected readonly deployments: Cache<V1Deployment>;
  protected readonly pods: Cache<V1Pod>;
  private readonly listeners = new WorkerListeners();
  protected readonly started: Promise<void>;
  /** See `DeploymentWorkersOptions.homeNamespace`. */
  protected readonly home: string;
  private closed = false;

  constructor(protected readonly options: DeploymentWorkersOptions) {
    const { kubeConfig: kc, namespace } = options;
    this.home = options.homeNamespace ?? namespace;
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

  /** The worker's Deployment as last seen (DeploymentRuntime: or as it just wrote it). */
  protected deploymentOf(name: string): V1Deployment | undefined {
    return this.deployments.get(name, this.options.namespace);
  }

  async observe(id: string): Promise<WorkerObservation | undefined> {
    await this.started;
    const name = deploymentName(id, this.home);
    const deployment = this.deploymentOf(name);
    const pods = this.podsOf(name);
    const observation = observeWorker(id, deployment, pods);
    // Which pods the log is read from: a change (a pod replaced, a replica
    // added) is a new run of the worker's log.
    const uids = currentPods(pods, templateHash(deployment))
      .map((p) => p.metadata?.uid)
      .filter(Boolean);
    return observation && uids.length > 0 ? { ...observation, instance: uids.join(',') } : observation;
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

  /** A ready pod of the worker: its IP and the worker port. */
  async metricsUrl(id: string): Promise<string | undefined> {
    return (await this.metricsUrls(id))[0];
  }

  /** Every ready pod of the worker (a target of several replicas has several). */
  async metricsUrls(id: string): Promise<string[]> {
    await this.started;
    const name = deploymentName(id, this.home);
    return this.podsOf(name)
      .filter(
        (p) =>
          !p.metadata?.deletionTimestamp &&
          p.status?.podIP &&
          p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'),
      )
      .map((p) => {
        const ip = p.status!.podIP!;
        return `http://${ip.includes(':') ? `[${ip}]` : ip}:${WORKER_PORT}/metrics`;
      });
  }

  subscribe(listener: (id: string) => void): () => void {
    return this.listeners.subscribe(listener);
  }

  /**
   * The worker container's log through the API server (the kubelet serves it):
   * the current pod of the worker, or, for a worker of several replicas, every
   * current pod's, merged (instance-logs.ts); nothing when it has none yet.
   */
  async *logs(
    id: string,
    options: { tail?: number; follow?: boolean; signal?: AbortSignal },
  ): AsyncIterable<string> {
    await this.started;
    const name = deploymentName(id, this.home);
    const pods = currentPods(this.podsOf(name), templateHash(this.deploymentOf(name)));
    const names = pods.map((p) => p.metadata!.name!);
    yield* instancesLog(
      (i, o) => this.podLog(id, names[i]!, { ...o, signal: options.signal }),
      names.length,
      options,
    );
  }

  /** One pod's worker container log. */
  private async *podLog(
    id: string,
    pod: string,
    options: { tail?: number; follow?: boolean; signal?: AbortSignal },
  ): AsyncIterable<string> {
    const stream = new PassThrough();
    // client-node pipes the response body into `stream` and leaves the body's
    // errors unhandled, so ending a follow (abort) or a reset connection would
    // be an uncaught AbortError that ends the process. Taken here: the log ends.
    stream.on('pipe', (body: Readable) => body.on('error', () => stream.end()));
    let abort: AbortController;
    try {
      abort = await new Log(this.options.kubeConfig).log(
        this.options.namespace,
        pod,
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

  /** Only the watches stop (workers outlive whoever watches them). */
  async close(): Promise<void> {
    this.closed = true;
    await Promise.allSettled([this.deployments.stop(), this.pods.stop()]);
  }

  protected podsOf(deployment: string): V1Pod[] {
    return this.pods
      .list(this.options.namespace)
      .filter((p) => p.metadata?.labels?.[WORKER_LABEL] === deployment);
  }

  protected notify(id: string): void {
    this.listeners.notify(id);
  }
}

/** The configuration hash of the Deployment's pod template (what its current pods carry). */
function templateHash(deployment: V1Deployment | undefined): string | undefined {
  return deployment?.spec?.template?.metadata?.annotations?.[CONFIG_HASH_ANNOTATION];
}

/**
 * The pod whose log is the worker's: scheduled, not being deleted, running
 * the Deployment's current configuration (`configHash`) when one does, then
 * the newest. Creation times have one-second resolution, so a replaced pod
 * and its successor can tie: the configuration decides, not the order.
 */
export function currentPod(pods: readonly V1Pod[], configHash: string | undefined): V1Pod | undefined {
  const rank = (p: V1Pod) =>
    (p.metadata?.deletionTimestamp ? 0 : 2) +
    (configHash !== undefined && p.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] === configHash ? 1 : 0);
  return pods
    .filter((p) => p.spec?.nodeName)
    .sort(
      (a, b) =>
        rank(b) - rank(a) ||
        String(b.metadata?.creationTimestamp).localeCompare(String(a.metadata?.creationTimestamp)),
    )[0];
}

/**
 * The pods whose logs are the worker's when it has several replicas: every
 * scheduled pod not being deleted that runs the Deployment's current
 * configuration (every scheduled one not being deleted when none does yet),
 * oldest first; at most the one `currentPod` picks while the others are gone.
 */
export function currentPods(pods: readonly V1Pod[], configHash: string | undefined): V1Pod[] {
  const live = pods.filter((p) => p.spec?.nodeName && !p.metadata?.deletionTimestamp && p.metadata?.name);
  const current = live.filter(
    (p) => configHash !== undefined && p.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] === configHash,
  );
  const chosen = current.length > 0 ? current : live;
  if (chosen.length > 0)
    return [...chosen].sort((a, b) =>
      String(a.metadata?.creationTimestamp).localeCompare(String(b.metadata?.creationTimestamp)),
    );
  const one = currentPod(pods, configHash);
  return one?.metadata?.name ? [one] : [];
}
