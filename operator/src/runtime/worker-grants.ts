import { type ConnectorResource, type DataModelResource } from '@sluice/shared/catalog';
import {
  managedSecretName,
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

interface Config {
  connector_id?: unknown;
  subscriptions?: { id?: unknown; datamodel_id?: unknown }[];
}

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
  const config = spec.config as Config;
  const teams = new Set<string>();
  const own = new Set<string>();
  const addConnector = async (id: unknown) => {
    if (typeof id !== 'string') return;
    const c = await cluster.get<ConnectorResource>('Connector', spec.namespace, id);
    if (!c) return;
    teams.add(c.spec.teamId);
    own.add(managedSecretName('connector', id));
  };
  await addConnector(config.connector_id);
  for (const sub of config.subscriptions ?? []) {
    if (typeof sub.id === 'string') own.add(managedSecretName('subscription', sub.id));
    if (typeof sub.datamodel_id !== 'string') continue;
    const dm = await cluster.get<DataModelResource>('DataModel', spec.namespace, sub.datamodel_id);
    if (dm) await addConnector(dm.spec.connectorId);
  }
  return { teamIds: [...teams], envIds: [], ownSecrets: [...own], envGrantsUnchecked: true };
}

/** `DeploymentRuntimeOptions.grantedRefs`: the references of a worker's configuration it may be given. */
export function workerGrants(opts: WorkerGrantsOptions): (spec: WorkerSpec) => Promise<SecretKeyRef[]> {
  return async (spec) =>
    grantedRefs(opts.secrets, opts.secretNamespace, spec.config, await workerScope(opts, spec));
}
