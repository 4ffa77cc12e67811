import { NotFoundError, type DeletionObjectKind } from '@sluice/shared';
import { managedSecretName } from '../../catalog/secrets.js';
import type { GatewayContext } from '../../context.js';
import { deleteConnectorObjects } from '../connectors/connectors.service.js';
import { deleteSubscriptionObjects } from '../subscriptions/subscriptions.service.js';
import { deleteTasksOf } from '../warehouses/tasks.repository.js';

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
      // Also drops a PostgreSQL source's replication slot (capture-release.ts);
      // the operator's finalizer stops the worker before the connector goes.
      return deleteConnectorObjects(ctx, id);
    case 'warehouses':
      await deleteTasksOf(ctx.db, id);
      await ctx.catalog.delete('Warehouse', id);
      await ctx.secretStore.delete(ctx.config.namespace, managedSecretName('warehouse', id));
      return;
  }
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
