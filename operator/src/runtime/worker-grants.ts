import { workerSecretOwners } from '@sluice/shared/catalog';
import {
  type ClusterPort,
  type SecretScope,
  type SecretStorePort,
  type WorkerSpec,
} from '@sluice/shared/ports';
import { grantedRefs, type SecretKeyRef } from '@sluice/shared/secrets';

// Which secret references a worker pod is given (docs/security.md, "Secret
// references"): a worker Deployment maps each to a `secretKeyRef` that the
// kubelet resolves, so the operator checks the grants here, as the gateway
// does on every use it makes. The scope is the worker's: its connector's
// team and the teams of the sources whose streams it reads, with the
// managed secrets of those connectors and of its subscriptions. The operator
// cannot see which environment a team is in: an environment grant counts
// (the gateway checked it when the reference was written).

export interface WorkerGrantsOptions {
  secrets: SecretStorePort;
  /** The namespace of the Secrets (the workers'). */
  secretNamespace: string;
  /** The cluster adapter of a watched namespace (where the worker's objects live). */
  clusterFor: (namespace: string) => ClusterPort;
}

/** The scope of a worker's references, from the objects its configuration was built from. */
export async function workerScope(opts: WorkerGrantsOptions, spec: WorkerSpec): Promise<SecretScope> {
  const cluster = opts.clusterFor(spec.namespace);
  const owners = await workerSecretOwners(spec.config, (kind, name) =>
    cluster.get(kind, spec.namespace, name),
  );
  return { ...owners, envIds: [], envGrantsUnchecked: true };
}

/** `DeploymentRuntimeOptions.grantedRefs`: the references of a worker's configuration it may be given. */
export function workerGrants(opts: WorkerGrantsOptions): (spec: WorkerSpec) => Promise<SecretKeyRef[]> {
  return async (spec) =>
    grantedRefs(opts.secrets, opts.secretNamespace, spec.config, await workerScope(opts, spec));
}
