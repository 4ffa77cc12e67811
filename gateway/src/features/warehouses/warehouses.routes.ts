import {
  StatementResult,
  StatementSubmit,
  WarehouseCreate,
  WarehouseListQuery,
  WarehousePage,
  WarehouseRead,
  WarehouseUpdate,
} from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { IdParams } from '../../http/params.js';
import { created, noContent, ok, route, type AnyRoute } from '../../http/route.js';
import * as warehouses from './warehouses.service.js';

export const tag = 'warehouses';
export const forbidden403 = { description: 'Not a member of the owning team' };
export const notFound404 = { description: 'No such warehouse' };
const invalid422 = { description: 'Invalid settings (every issue, located)' };

export function warehouseRoutes(ctx: GatewayContext): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/warehouses/',
      tag,
      auth: 'user',
      summary: 'List warehouses (filters: team_id, status, search)',
      description: 'Warehouses of the teams the caller belongs to, by name.',
      query: WarehouseListQuery,
      responses: { 200: { description: 'A page of warehouses', schema: WarehousePage }, 403: forbidden403 },
      handler: async ({ principal, query }) => ok(await warehouses.listWarehouses(ctx, principal, query)),
    }),
    route({
      method: 'post',
      path: '/warehouses/',
      tag,
      auth: 'user',
      idempotent: true,
      summary: 'Create a warehouse (Draft until tested)',
      body: WarehouseCreate,
      responses: {
        201: { description: 'Created, status Draft', schema: WarehouseRead },
        403: forbidden403,
        409: { description: 'A warehouse with this name exists in the team' },
        422: invalid422,
      },
      handler: async ({ principal, body }) => created(await warehouses.createWarehouse(ctx, principal, body)),
    }),
    route({
      method: 'get',
      path: '/warehouses/:id',
      tag,
      auth: 'user',
      summary: 'Read a warehouse with its status (the token reads <redacted>)',
      params: IdParams,
      responses: {
        200: { description: 'The warehouse', schema: WarehouseRead },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, params }) => ok(await warehouses.getWarehouse(ctx, principal, params.id)),
    }),
    route({
      method: 'patch',
      path: '/warehouses/:id',
      tag,
      auth: 'user',
      summary: 'Change a warehouse; connection changes are tested first and saved only if the test passes',
      params: IdParams,
      body: WarehouseUpdate,
      responses: {
        200: { description: 'The warehouse', schema: WarehouseRead },
        403: forbidden403,
        404: notFound404,
        409: { description: 'Name taken in the team, or changed concurrently' },
        422: {
          description:
            "Invalid settings, or the connection test failed (the engine's message); nothing changed",
        },
      },
      handler: async ({ principal, params, body }) =>
        ok(await warehouses.updateWarehouse(ctx, principal, params.id, body)),
    }),
    route({
      method: 'delete',
      path: '/warehouses/:id',
      tag,
      auth: 'user',
      summary: 'Delete a warehouse with its tasks and stored token',
      params: IdParams,
      responses: { 204: { description: 'Deleted' }, 403: forbidden403, 404: notFound404 },
      handler: async ({ principal, params }) => {
        await warehouses.deleteWarehouse(ctx, principal, params.id);
        return noContent();
      },
    }),
    route({
      method: 'post',
      path: '/warehouses/:id/test',
      tag,
      auth: 'user',
      summary: 'Run the connection test (three read-only calls); its verdict becomes the status',
      description:
        'Reads the SQL warehouse, then the catalog, then the schema (those configured), and nothing else. ' +
        "Status Live when all pass, Error with the engine's message otherwise (spec 3.3).",
      params: IdParams,
      responses: {
        200: { description: 'The warehouse with its new status', schema: WarehouseRead },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, params }) => ok(await warehouses.testWarehouse(ctx, principal, params.id)),
    }),
    route({
      method: 'post',
      path: '/warehouses/:id/statements',
      tag,
      auth: 'user',
      summary: 'Run a SQL statement on the warehouse and return its rows (relayed, not stored)',
      description:
        'Submitted through the SQL Statement Execution API; waits until it ends or its deadline ' +
        '(then it is cancelled). A statement that fails on the engine answers 200 with state FAILED and the error.',
      params: IdParams,
      body: StatementSubmit,
      responses: {
        200: { description: 'The final state and the rows', schema: StatementResult },
        403: forbidden403,
        404: notFound404,
        409: { description: 'The stored settings cannot be used (token secret gone)' },
        502: { description: 'The engine refused the call or could not be reached (its message)' },
      },
      handler: async ({ principal, params, body }) =>
        ok(await warehouses.submitStatement(ctx, principal, params.id, body)),
    }),
  ];
}
