import { ApiException, type V1Deployment, type V1PodTemplateSpec } from '@kubernetes/client-node';
import type { WorkerObservation, WorkerRuntimePort, WorkerSpec } from '@sluice/shared/ports';
import type { SecretKeyRef } from '@sluice/shared/secrets';
import { DeploymentWorkers, type DeploymentWorkersOptions } from './deployment-workers.js';
import {
  CONFIG_HASH_ANNOTATION,
  POD_TEMPLATE_HASH_ANNOTATION,
  deploymentName,
  podTemplateHash,
  scaleOf,
  workerDeployment,
} from './worker-deployment.js';

// The worker runtime of a cluster: one Deployment per running connector, in
// the worker namespace (where their Secrets and the workers' service account
// are, apart from the control plane's own Secrets). Observations come from
// two informers (Deployments and pods carrying our labels: DeploymentWorkers,
// the read side the gateway also uses); writes go straight to the API server.
// Workers outlive the operator: a new leader finds them in its caches and
// adopts them.

export interface DeploymentRuntimeOptions extends DeploymentWorkersOptions {
  /** The chart's pod template (image, service account, security context, resources). */
  podTemplate: V1PodTemplateSpec;
  /**
   * The secret references a worker may be given (worker-grants.ts: the
   * granted ones); absent, every reference of its configuration.
   */
  grantedRefs?: (spec: WorkerSpec) => Promise<SecretKeyRef[]>;
}

export class DeploymentRuntime extends DeploymentWorkers implements WorkerRuntimePort {
  /**
   * Our own writes until the informer has seen them (null: deleted), so an
   * observation right after `ensure` or `stop` already reflects it.
   */
  private readonly written = new Map<string, V1Deployment | null>();
  /** The chart's pod template as its Deployments record it (POD_TEMPLATE_HASH_ANNOTATION). */
  private readonly templateHash: string;

  constructor(protected override readonly options: DeploymentRuntimeOptions) {
    super(options);
    this.templateHash = podTemplateHash(options.podTemplate);
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
  }

  /**
   * A worker whose Deployment was made from another chart template (the
   * release before a `helm upgrade`: another image, other resources) is
   * reported with an empty configuration hash (no configuration's), so its
   * connector's plan writes it again and it rolls onto the new template.
   */
  override async observe(id: string): Promise<WorkerObservation | undefined> {
    const observation = await super.observe(id);
    const made = this.deploymentOf(deploymentName(id, this.home))?.metadata?.annotations;
    if (!observation || !made || made[POD_TEMPLATE_HASH_ANNOTATION] === this.templateHash) return observation;
    return { ...observation, configHash: '' };
  }

  async ensure(spec: WorkerSpec): Promise<void> {
    await this.started;
    const { namespace } = this.options;
    const name = deploymentName(spec.id, this.home);
    let desired: V1Deployment | undefined;
    // Read, not the cache: right after a write the cache may not show it yet.
    for (let attempt = 0; ; attempt++) {
      const current = await this.read(name);
      if (current?.metadata?.deletionTimestamp) {
        throw new Error(`the previous worker ${name} is still being deleted; retrying`);
      }
      const made = current?.metadata?.annotations;
      if (
        current &&
        made?.[CONFIG_HASH_ANNOTATION] === spec.configHash &&
        made[POD_TEMPLATE_HASH_ANNOTATION] === this.templateHash
      ) {
        // The same configuration and chart template: at most a new replica count, the pod template untouched.
        if (await this.rescale(name, current, spec)) return;
        if (attempt >= 3) throw new Error(`the worker ${name} kept changing while it was scaled; retrying`);
        continue;
      }
      // The grants are read when the Deployment is written (a new configuration or a restart).
      desired ??= workerDeployment(
        spec,
        this.options.podTemplate,
        namespace,
        await this.options.grantedRefs?.(spec),
        this.home,
      );
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

  /**
   * Writes the replica count and strategy of `spec` onto the Deployment when
   * they differ (a scale: no pod of the current configuration is replaced).
   * False when another write came first (read again).
   */
  private async rescale(name: string, current: V1Deployment, spec: WorkerSpec): Promise<boolean> {
    const scale = scaleOf(spec);
    if (current.spec?.replicas === scale.replicas && current.spec?.strategy?.type === scale.strategy?.type) {
      return true;
    }
    // The strategy is replaced whole (Recreate takes no rollingUpdate settings).
    const body: V1Deployment = { ...current, spec: { ...current.spec!, ...scale } };
    try {
      const written = await this.apps.replaceNamespacedDeployment({
        name,
        namespace: this.options.namespace,
        body,
      });
      this.remember(name, written);
      this.notify(spec.id);
      return true;
    } catch (err) {
      if (status(err) === 409) return false;
      throw err;
    }
  }

  async stop(id: string): Promise<void> {
    await this.started;
    const name = deploymentName(id, this.home);
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

  /** Our own write until the informer has seen it. */
  protected override deploymentOf(name: string): V1Deployment | undefined {
    return this.written.has(name) ? (this.written.get(name) ?? undefined) : super.deploymentOf(name);
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
