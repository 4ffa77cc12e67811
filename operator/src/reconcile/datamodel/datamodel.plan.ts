import type { ConnectorResource, DataModelResource } from '@sluice/shared/catalog';
import type { Action, Plan } from '../actions.js';
import { partStatusActions } from '../part-status.js';
import { objectRef, refOf } from '../reconciler.js';

/**
 * A data model flows when its `enabled` is on and its connector is live
 * (part-status.ts). It is owned by its connector (an ownerReference,
 * metadata the operator sets whoever created it), so that the garbage
 * collector deletes it with the connector, as the gateway's delete does.
 *
 * Where no collector runs (the embedded cluster, a bare kube-apiserver) the
 * connector's finalizer deletes its data models; but the ownerReference and
 * the finalizer are written by two reconciles, in either order, and a
 * connector deleted before its finalizer was added (or after it was removed
 * by hand while no operator ran) is gone at once. So a data model owned by
 * a connector that is gone is deleted here, as the collector would: the
 * reference proves the connector existed, and the executor reads the
 * cluster for it before deleting (a data model applied before its
 * connector has no ownerReference yet and stays).
 */
export function planDataModel(
  d: DataModelResource,
  connector: ConnectorResource | undefined,
  now: string,
): Plan {
  if (d.metadata.deletionTimestamp) return { actions: [] };
  if (!connector && ownedBy(d, d.spec.connectorId)) {
    const owner = objectRef('Connector', d.metadata.namespace, d.spec.connectorId);
    return { actions: [{ type: 'delete', ref: refOf(d), ifGone: owner }] };
  }
  const actions: Action[] = [];
  if (connector?.metadata.uid) {
    const owners = ownerReferences(d, connector);
    if (owners)
      actions.push({ type: 'patch', ref: refOf(d), patch: { metadata: { ownerReferences: owners } } });
  }
  actions.push(...partStatusActions(d, d.spec.enabled, connector, now));
  return { actions };
}

/**
 * The data model's ownerReferences with one to its connector (replacing one
 * to an earlier connector of that name); undefined when it already has it.
 */
function ownerReferences(
  d: DataModelResource,
  c: ConnectorResource,
): NonNullable<DataModelResource['metadata']['ownerReferences']> | undefined {
  const current = d.metadata.ownerReferences ?? [];
  if (current.some((o) => o.kind === 'Connector' && o.uid === c.metadata.uid)) return undefined;
  return [
    ...current.filter((o) => !(o.kind === 'Connector' && o.name === c.metadata.name)),
    { apiVersion: c.apiVersion, kind: 'Connector', name: c.metadata.name, uid: c.metadata.uid as string },
  ];
}

/** Whether `d` has an ownerReference to the connector `name` (of any uid). */
function ownedBy(d: DataModelResource, name: string): boolean {
  return (d.metadata.ownerReferences ?? []).some((o) => o.kind === 'Connector' && o.name === name);
}
