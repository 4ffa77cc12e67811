import { NotFoundError } from '@sluice/shared/ports';
import { type DeletionObjectKind } from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { deleteConnectorObjects } from '../connectors/connectors.service.js';
import { deleteSubscriptionObjects } from '../subscriptions/subscriptions.service.js';
import { deleteWarehouseObjects } from '../warehouses/warehouses.service.js';

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
      // Its data models are gone by this step.
      return deleteConnectorObjects(ctx, id);
    case 'warehouses':
      return deleteWarehouseObjects(ctx, id);
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
