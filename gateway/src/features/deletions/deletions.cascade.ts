import { type ConnectorResource } from '@sluice/shared/catalog';
import { NotFoundError } from '@sluice/shared/ports';
import { type DeletionObjectKind } from '@sluice/shared/schemas';
import { managedSecretName } from '../../catalog/secrets.js';
import type { GatewayContext } from '../../context.js';
import { releaseForDelete } from '../connectors/connectors.capture-release.js';
import { deleteSubscriptionObjects } from '../subscriptions/subscriptions.service.js';
import { deleteTasksOf } from '../warehouse-tasks/warehouse-tasks.repository.js';

// How each object of a deleted team goes: through the same delete paths as
// the API's own deletes, without their "in use" refusals (everything that
// uses the object goes too, dependents first). Each is idempotent, so a
// resumed deletion may repeat the object it was at.

/** Deletes one object of `kind` with its managed secret (and a warehouse's tasks). */
export async function deleteObject(ctx: GatewayContext, kind: DeletionObjectKind, id: string): Promise<void> {
  switch (kind) {
    case 'pipelines':
      // Its parts are objects of the team too: the next steps delete them.
      return ctx.catalog.delete('Pipeline', id);
    case 'subscriptions':
      return deleteSubscriptionObjects(ctx, id);
    case 'datamodels':
      return ctx.catalog.delete('DataModel', id);
    case 'connectors':
      return deleteConnector(ctx, id);
    case 'warehouses':
      await deleteTasksOf(ctx.db, id);
      await ctx.catalog.delete('Warehouse', id);
      await ctx.secretStore.delete(ctx.config.workerNamespace, managedSecretName('warehouse', id));
      return;
  }
}

/**
 * The API's connector delete (its data models are gone by this step), read
 * from the cluster: the API's reads no longer show a connector of a deleted
 * team. A PostgreSQL source's capture is resolved before its secret goes and
 * dropped after the connector (connectors.capture-release.ts); the operator's finalizer
 * stops the worker meanwhile, and the drop waits for it to let go of the slot.
 */
async function deleteConnector(ctx: GatewayContext, id: string): Promise<void> {
  const c = await ctx.catalog.get<ConnectorResource>('Connector', id);
  const release = c
    ? await releaseForDelete(ctx, { id, connector_type: c.spec.connectorType, spec: c.spec })
    : async () => undefined;
  await ctx.catalog.delete('Connector', id);
  await ctx.secretStore.delete(ctx.config.workerNamespace, managedSecretName('connector', id));
  await release();
}

/**
 * Asks the operator to stop the connector's worker (the same desired state
 * as `POST /connectors/{id}/stop`), so that a gateway restart before its
 * delete does not see it started again.
 */
export async function stopConnector(ctx: GatewayContext, id: string): Promise<void> {
  try {
    await ctx.catalog.patch('Connector', id, { spec: { desiredState: 'stopped' } });
  } catch (err) {
    if (!(err instanceof NotFoundError)) throw err;
  }
}
