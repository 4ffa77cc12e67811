import { managedSecretName } from '../ports/secret-store.js';
import type { ClusterObject } from '../ports/cluster.js';
import type { ConnectorResource, DataModelResource } from './resources.js';

/**
 * Whose secret references a worker may use (docs/security.md, "Secret
 * references"): the teams of its connector and of the sources whose streams
 * it reads, and the managed secrets of those connectors and of its
 * subscriptions — the objects its configuration was built from.
 */
export interface WorkerSecretOwners {
  teamIds: string[];
  ownSecrets: string[];
}

/** Reads a catalog object by kind and name where the worker's objects live; undefined if it is gone. */
export type CatalogLookup = (
  kind: 'Connector' | 'DataModel',
  name: string,
) => Promise<ClusterObject | undefined>;

/**
 * The owners of a worker configuration's references (`worker-config.ts`; read
 * as untrusted, so a malformed field names nothing), for the gateway's own
 * uses of it and for the operator's grants of the worker's pod alike.
 */
export async function workerSecretOwners(
  config: unknown,
  lookup: CatalogLookup,
): Promise<WorkerSecretOwners> {
  const { connector_id, subscriptions } = (config ?? {}) as {
    connector_id?: unknown;
    subscriptions?: { id?: unknown; datamodel_id?: unknown }[];
  };
  const teams = new Set<string>();
  const own = new Set<string>();
  const addConnector = async (id: unknown) => {
    if (typeof id !== 'string') return;
    const c = (await lookup('Connector', id)) as ConnectorResource | undefined;
    if (!c) return;
    teams.add(c.spec.teamId);
    own.add(managedSecretName('connector', id));
  };
  await addConnector(connector_id);
  for (const sub of Array.isArray(subscriptions) ? subscriptions : []) {
    if (typeof sub?.id === 'string') own.add(managedSecretName('subscription', sub.id));
    if (typeof sub?.datamodel_id !== 'string') continue;
    const dm = (await lookup('DataModel', sub.datamodel_id)) as DataModelResource | undefined;
    if (dm) await addConnector(dm.spec.connectorId);
  }
  return { teamIds: [...teams], ownSecrets: [...own] };
}
