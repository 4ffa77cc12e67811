import {
  DataModelListQuery,
  DataModelPage,
  DataModelRead,
  DataModelSchemaRead,
  ErrorTableUpdate,
  MonitoringRead,
} from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { byIdReader } from '../../http/by-id.js';
import { IdParams } from '../../http/params.js';
import { accepted, noContent, ok, route, type AnyRoute } from '../../http/route.js';
import * as datamodels from './datamodels.service.js';

const tag = 'datamodels';
const forbidden403 = { description: 'Not a member of the owning team' };
const notFound404 = { description: 'No such data model' };

export function datamodelRoutes(ctx: GatewayContext): AnyRoute[] {
  const toggle = (action: 'enable' | 'disable') =>
    route({
      method: 'post',
      path: `/datamodels/:id/${action}`,
      tag,
      auth: 'user',
      summary: `${action === 'enable' ? 'Resume' : 'Stop'} capturing this data model`,
      description: 'The source worker restarts to apply it (spec 3.2); the answer comes before it has.',
      params: IdParams,
      responses: {
        202: { description: 'The data model', schema: DataModelRead },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, params }) =>
        accepted(await datamodels.setEnabled(ctx, principal, params.id, action === 'enable')),
    });
  const read = byIdReader({ collection: 'datamodels', tag, forbidden403, notFound404 });
  return [
    route({
      method: 'get',
      path: '/datamodels/',
      tag,
      auth: 'user',
      summary: 'List data models (filters: team_id, connector_id, enabled, search)',
      query: DataModelListQuery,
      responses: { 200: { description: 'A page of data models', schema: DataModelPage }, 403: forbidden403 },
      handler: async ({ principal, query }) => ok(await datamodels.listDataModels(ctx, principal, query)),
    }),
    read('', 'Read a data model', DataModelRead, (id, p) => datamodels.getDataModel(ctx, p, id)),
    read(
      '/monitoring',
      'Counters, latency and the source slot’s retained WAL of the data model (zeros until a worker reports)',
      MonitoringRead,
      (id, p) => datamodels.getMonitoring(ctx, p, id),
    ),
    read('/schema', 'Schema of the data model', DataModelSchemaRead, (id, p) =>
      datamodels.getSchema(ctx, p, id),
    ),
    route({
      method: 'patch',
      path: '/datamodels/:id/error-table',
      tag,
      auth: 'user',
      summary: 'Change where the rows that fail go',
      params: IdParams,
      body: ErrorTableUpdate,
      responses: {
        200: { description: 'The data model', schema: DataModelRead },
        403: forbidden403,
        404: notFound404,
        422: {
          description: 'Enabled without a name, or a target that is not a target connector of the team',
        },
      },
      handler: async ({ principal, params, body }) =>
        ok(await datamodels.updateErrorTable(ctx, principal, params.id, body)),
    }),
    toggle('enable'),
    toggle('disable'),
    route({
      method: 'delete',
      path: '/datamodels/:id',
      tag,
      auth: 'user',
      summary: 'Stop capturing this table or topic for good (spec 4.5 rule 3)',
      params: IdParams,
      responses: {
        204: { description: 'Deleted; the entry left the connector’s capture list' },
        403: forbidden403,
        404: notFound404,
        409: { description: 'Still delivered, or the last entry of its connector' },
      },
      handler: async ({ principal, params }) => {
        await datamodels.deleteDataModel(ctx, principal, params.id);
        return noContent();
      },
    }),
  ];
}
