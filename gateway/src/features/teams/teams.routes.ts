import { Type } from '@sinclair/typebox';
import {
  BulkMembers,
  EnvScopeQuery,
  NameQuery,
  PageQuery,
  TeamCreate,
  TeamMemberList,
  TeamPage,
  TeamRead,
  TeamUpdate,
} from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { IdParams, TeamMemberParams } from '../../http/params.js';
import { created, noContent, ok, route, type AnyRoute } from '../../http/route.js';
import * as teams from './teams.service.js';

const tag = 'teams';
const forbidden403 = { description: 'Not a member, or not an owner for writes' };
const notFound404 = { description: 'No such team' };
const conflict409 = { description: 'A team with this name exists in the environment' };
const ListQuery = Type.Composite([PageQuery, EnvScopeQuery]);
const FilterQuery = Type.Composite([NameQuery, EnvScopeQuery]);

export function teamRoutes(ctx: GatewayContext): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/teams/',
      tag,
      auth: 'user',
      summary:
        'Teams of the environment (env_id, default the active one): all for its admins, else the caller’s',
      query: ListQuery,
      responses: { 200: { description: 'A page of teams', schema: TeamPage }, 403: forbidden403 },
      handler: async ({ principal, query }) => ok(await teams.listTeams(ctx, principal, query)),
    }),
    route({
      method: 'post',
      path: '/teams/',
      tag,
      auth: 'user',
      idempotent: true,
      summary: 'Create a team in the environment (env_id, default the active one); the caller becomes owner',
      query: EnvScopeQuery,
      body: TeamCreate,
      responses: {
        201: { description: 'Created', schema: TeamRead },
        403: forbidden403,
        404: { description: 'No such environment' },
        409: conflict409,
      },
      handler: async ({ principal, body, query }) =>
        created(await teams.createTeam(ctx, principal, body, query.env_id)),
    }),
    route({
      method: 'get',
      path: '/teams/filter-one',
      tag,
      auth: 'user',
      summary: 'The team with this name in the environment',
      query: FilterQuery,
      responses: { 200: { description: 'The team', schema: TeamRead }, 403: forbidden403, 404: notFound404 },
      handler: async ({ principal, query }) =>
        ok(await teams.findTeamByName(ctx, principal, query.name, query.env_id)),
    }),
    route({
      method: 'get',
      path: '/teams/:id',
      tag,
      auth: 'user',
      summary: 'Read a team',
      params: IdParams,
      responses: { 200: { description: 'The team', schema: TeamRead }, 403: forbidden403, 404: notFound404 },
      handler: async ({ principal, params }) => ok(await teams.getTeam(ctx, principal, params.id)),
    }),
    route({
      method: 'patch',
      path: '/teams/:id',
      tag,
      auth: 'user',
      summary: 'Update a team (owner)',
      params: IdParams,
      body: TeamUpdate,
      responses: {
        200: { description: 'Updated', schema: TeamRead },
        403: forbidden403,
        404: notFound404,
        409: conflict409,
      },
      handler: async ({ principal, params, body }) =>
        ok(await teams.updateTeam(ctx, principal, params.id, body)),
    }),
    route({
      method: 'delete',
      path: '/teams/:id',
      tag,
      auth: 'user',
      summary: 'Delete a team and everything it owns (owner)',
      description:
        'The team and every object of it (connectors, data models, subscriptions, pipelines, warehouses) ' +
        'are gone from every read at once; the objects themselves — workers stopped, PostgreSQL ' +
        'replication slots dropped, managed secrets and warehouse tasks removed — go in the background ' +
        'as one tracked deletion that survives a gateway restart, which a superuser follows at ' +
        'GET /deletions/ (docs/api.md "Deletions").',
      params: IdParams,
      responses: {
        204: { description: 'Deleted; its objects are being removed' },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, params }) => {
        await teams.deleteTeam(ctx, principal, params.id);
        return noContent();
      },
    }),
    route({
      method: 'get',
      path: '/teams/:id/members',
      tag,
      auth: 'user',
      summary: 'Members of a team with their role',
      params: IdParams,
      responses: {
        200: { description: 'Members', schema: TeamMemberList },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, params }) => ok(await teams.listMembers(ctx, principal, params.id)),
    }),
    route({
      method: 'post',
      path: '/teams/:id/members/bulk',
      tag,
      auth: 'user',
      summary: 'Add members (owners only); they also join the team’s environment',
      params: IdParams,
      body: BulkMembers,
      responses: { 204: { description: 'Added' }, 403: forbidden403, 404: notFound404 },
      handler: async ({ principal, params, body }) => {
        await teams.addMembers(ctx, principal, params.id, body.members);
        return noContent();
      },
    }),
    route({
      method: 'delete',
      path: '/teams/:id/members/:user_id',
      tag,
      auth: 'user',
      summary: 'Remove a member (owners), or leave the team (oneself)',
      params: TeamMemberParams,
      responses: {
        204: { description: 'Removed' },
        403: forbidden403,
        404: { description: 'No such team or member' },
        409: { description: 'The last owner cannot leave' },
      },
      handler: async ({ principal, params }) => {
        await teams.removeMember(ctx, principal, params.id, params.user_id);
        return noContent();
      },
    }),
  ];
}
