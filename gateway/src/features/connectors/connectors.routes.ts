import {
  CatalogFilterOneQuery,
  ConnectorCreate,
  ConnectorListQuery,
  ConnectorPage,
  ConnectorRead,
  ConnectorUpdate,
  StateString,
} from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { IdParams } from '../../http/params.js';
import { accepted, created, noContent, ok, route, type AnyRoute } from '../../http/route.js';
import * as connectors from './connectors.service.js';
import { connectorWorkerConfig } from './connectors.worker-config.js';

const tag = 'connectors';
const forbidden403 = { description: 'Not a member of the owning team' };
const notFound404 = { description: 'No such connector' };
const invalid422 = { description: 'Invalid body or configuration (every issue, located)' };

export function connectorRoutes(ctx: GatewayContext): AnyRoute[] {
  const list = (summary: string, direction?: 'source' | 'target') =>
    route({
      method: 'get',
      path: direction ? `/connectors/${direction}-config` : '/connectors/',
      tag,
      auth: 'user',
      summary,
      description: 'Connectors of the teams the caller belongs to, by name; filters combine.',
      query: ConnectorListQuery,
      responses: { 200: { description: 'A page of connectors', schema: ConnectorPage }, 403: forbidden403 },
      handler: async ({ principal, query }) =>
        ok(await connectors.listConnectors(ctx, principal, query, direction)),
    });
  const workerConfig = (direction: 'source' | 'target') =>
    route({
      method: 'get',
      path: `/connectors/:id/${direction}-worker-config`,
      tag,
      auth: 'user',
      summary: `What the ${direction} worker of this connector is given (secrets as references)`,
      params: IdParams,
      responses: {
        200: { description: 'The worker configuration' },
        403: forbidden403,
        404: {
          description: `No such connector, or not a ${direction} connector (it has no ${direction} worker)`,
        },
      },
      handler: async ({ principal, params }) =>
        ok(await connectorWorkerConfig(ctx, principal, params.id, direction)),
    });
  const run = (call: 'start' | 'stop', summary: string) =>
    route({
      method: 'post',
      path: `/connectors/:id/${call}`,
      tag,
      auth: 'user',
      summary,
      description:
        'Answers before the worker converges (spec 3.2): poll the connector until `live` or `error`. ' +
        'The call is the latest word on the connector: a stop sticks while a pipeline started earlier uses it, ' +
        'a start wins over a pipeline paused earlier (`desired_state_reason` says why it runs or not).',
      params: IdParams,
      responses: {
        202: { description: 'The new state, upper case', schema: StateString },
        403: forbidden403,
        404: notFound404,
        409: { description: 'Not allowed in the current state (the message names it)' },
      },
      handler: async ({ principal, params }) =>
        accepted(await connectors.runConnector(ctx, principal, params.id, call)),
    });

  return [
    list('List connectors (filters: team_id, connector_type, status, search)'),
    list('List source connectors with their configurations', 'source'),
    list('List target connectors with their configurations', 'target'),
    route({
      method: 'get',
      path: '/connectors/filter-one',
      tag,
      auth: 'user',
      summary: 'The connector with this name (in team_id when given)',
      query: CatalogFilterOneQuery,
      responses: {
        200: { description: 'The connector', schema: ConnectorRead },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, query }) =>
        ok(await connectors.findConnectorByName(ctx, principal, query.name, query.team_id)),
    }),
    route({
      method: 'post',
      path: '/connectors/',
      tag,
      auth: 'user',
      idempotent: true,
      summary: 'Create a connector (created paused); its capture list becomes data models',
      body: ConnectorCreate,
      responses: {
        201: { description: 'Created', schema: ConnectorRead },
        403: forbidden403,
        409: { description: 'A connector with this name exists in the team' },
        422: invalid422,
      },
      handler: async ({ principal, body }) => created(await connectors.createConnector(ctx, principal, body)),
    }),
    route({
      method: 'get',
      path: '/connectors/:id',
      tag,
      auth: 'user',
      summary: 'Read a connector with its status',
      params: IdParams,
      responses: {
        200: { description: 'The connector', schema: ConnectorRead },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, params }) => ok(await connectors.getConnector(ctx, principal, params.id)),
    }),
    route({
      method: 'patch',
      path: '/connectors/:id',
      tag,
      auth: 'user',
      summary: 'Change a connector (spec 4.5 rules)',
      params: IdParams,
      body: ConnectorUpdate,
      responses: {
        200: { description: 'The connector', schema: ConnectorRead },
        403: forbidden403,
        404: notFound404,
        409: { description: 'Name taken in the team, in use (team change), or changed concurrently' },
        422: invalid422,
      },
      handler: async ({ principal, params, body }) =>
        ok(await connectors.updateConnector(ctx, principal, params.id, body)),
    }),
    route({
      method: 'delete',
      path: '/connectors/:id',
      tag,
      auth: 'user',
      summary: 'Delete a connector with its data models',
      params: IdParams,
      responses: {
        204: { description: 'Deleted' },
        403: forbidden403,
        404: notFound404,
        409: { description: 'A subscription or pipeline still uses it (the message names them)' },
      },
      handler: async ({ principal, params }) => {
        await connectors.deleteConnector(ctx, principal, params.id);
        return noContent();
      },
    }),
    run('start', 'Start the connector’s worker'),
    run('stop', 'Stop the connector’s worker'),
    workerConfig('source'),
    workerConfig('target'),
  ];
}
