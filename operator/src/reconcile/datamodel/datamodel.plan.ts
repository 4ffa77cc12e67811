import type { ConnectorResource, DataModelResource } from '@sluice/shared/catalog';
import type { Action, Plan } from '../actions.js';
import { partStatusActions } from '../part-status.js';
import { refOf } from '../reconciler.js';

/**
 * A data model flows when its `enabled` is on and its connector is live
 * (part-status.ts). It is owned by its connector (an ownerReference,
 * metadata the operator sets whoever created it), so that the garbage
 * collector deletes it with the connector, as the gateway's delete does.
 */
export function planDataModel(
  d: DataModelResource,
  connector: ConnectorResource | undefined,
  now: string,
): Plan {
  if (d.metadata.deletionTimestamp) return { actions: [] };
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
