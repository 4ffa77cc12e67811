import { DeletionListQuery, DeletionPage, DeletionRead } from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { IdParams } from '../../http/params.js';
import { ok, route, type AnyRoute } from '../../http/route.js';
import * as deletions from './deletions.service.js';

const tag = 'deletions';
const forbidden403 = { description: 'Only a superuser can do this' };

const WHAT =
  '`DELETE /teams/{id}`, `DELETE /envs/{id}` and an import (`POST /users/import-all`) that leaves a ' +
  'team out answer at once; from then on the team (or environment) and every object of its teams are ' +
  'gone from every read and list. What they owned is removed in the background as one tracked ' +
  'deletion, step by step: pipelines; the connectors asked to stop their workers; subscriptions; data ' +
  'models; connectors (a PostgreSQL source’s replication slot and publication dropped on the source); ' +
  'warehouses with their tasks; each with its managed secret; then the wait until the cluster has let ' +
  'every object go. A step that fails is retried by the next tick (`message` says why), and a gateway ' +
  'restart resumes the deletion where it stood.';

export function deletionRoutes(ctx: GatewayContext): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/deletions/',
      tag,
      auth: 'user',
      summary: 'Deletions of teams and environments, newest first (superuser)',
      description: WHAT,
      query: DeletionListQuery,
      responses: { 200: { description: 'A page of deletions', schema: DeletionPage }, 403: forbidden403 },
      handler: async ({ principal, query }) => ok(await deletions.listDeletions(ctx, principal, query)),
    }),
    route({
      method: 'get',
      path: '/deletions/:id',
      tag,
      auth: 'user',
      summary: 'One deletion and its progress (superuser)',
      description: WHAT,
      params: IdParams,
      responses: {
        200: { description: 'The deletion', schema: DeletionRead },
        403: forbidden403,
        404: { description: 'No such deletion' },
      },
      handler: async ({ principal, params }) => ok(await deletions.getDeletion(ctx, principal, params.id)),
    }),
  ];
}
