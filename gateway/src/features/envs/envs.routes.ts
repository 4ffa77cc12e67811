import { EnvCreate, EnvPage, EnvRead, EnvUpdate, NameQuery, PageQuery } from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { IdParams } from '../../http/params.js';
import { created, noContent, ok, route, type AnyRoute } from '../../http/route.js';
import * as envs from './envs.service.js';

const tag = 'envs';
const forbidden403 = { description: 'Not a member, or not an admin for writes' };
const notFound404 = { description: 'No such environment' };
const conflict409 = { description: 'An environment with this name exists' };

export function envRoutes(ctx: GatewayContext): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/envs/',
      tag,
      auth: 'user',
      summary: 'Environments the caller belongs to (all for superusers)',
      query: PageQuery,
      responses: { 200: { description: 'A page of environments', schema: EnvPage } },
      handler: async ({ principal, query }) => ok(await envs.listEnvs(ctx, principal, query)),
    }),
    route({
      method: 'post',
      path: '/envs/',
      tag,
      auth: 'user',
      idempotent: true,
      summary: 'Create an environment; the caller becomes its admin',
      body: EnvCreate,
      responses: { 201: { description: 'Created', schema: EnvRead }, 409: conflict409 },
      handler: async ({ principal, body }) => created(await envs.createEnv(ctx, principal, body)),
    }),
    route({
      method: 'get',
      path: '/envs/filter-one',
      tag,
      auth: 'user',
      summary: 'The environment with this name',
      query: NameQuery,
      responses: {
        200: { description: 'The environment', schema: EnvRead },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, query }) => ok(await envs.findEnvByName(ctx, principal, query.name)),
    }),
    route({
      method: 'get',
      path: '/envs/:id',
      tag,
      auth: 'user',
      summary: 'Read an environment',
      params: IdParams,
      responses: {
        200: { description: 'The environment', schema: EnvRead },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, params }) => ok(await envs.getEnv(ctx, principal, params.id)),
    }),
    route({
      method: 'patch',
      path: '/envs/:id',
      tag,
      auth: 'user',
      summary: 'Update an environment (admin); retention_configuration is replaced whole',
      params: IdParams,
      body: EnvUpdate,
      responses: {
        200: { description: 'Updated', schema: EnvRead },
        403: forbidden403,
        404: notFound404,
        409: conflict409,
      },
      handler: async ({ principal, params, body }) =>
        ok(await envs.updateEnv(ctx, principal, params.id, body)),
    }),
    route({
      method: 'delete',
      path: '/envs/:id',
      tag,
      auth: 'user',
      summary: 'Delete an environment, its teams and everything they own (admin)',
      description:
        'The environment, its teams and every object of those teams are gone from every read at once; ' +
        'the objects themselves — workers stopped, PostgreSQL replication slots dropped, managed secrets ' +
        'and warehouse tasks removed — go in the background as one tracked deletion that survives a ' +
        'gateway restart, which a superuser follows at GET /deletions/ (docs/api.md "Deletions").',
      params: IdParams,
      responses: {
        204: { description: 'Deleted; the objects of its teams are being removed' },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, params }) => {
        await envs.deleteEnv(ctx, principal, params.id);
        return noContent();
      },
    }),
  ];
}
