import {
  ExportData,
  ServiceAccountTokenCreate,
  ServiceAccountTokenCreated,
  ServiceAccountTokenList,
  UserListQuery,
  UserPage,
  UserPasswordChange,
  UserRead,
  UserSafeUpdate,
} from '@sluice/shared/schemas';
import { requireSuperuser } from '../../auth/access.js';
import type { GatewayContext } from '../../context.js';
import { IdParams } from '../../http/params.js';
import { created, noContent, ok, route, type AnyRoute } from '../../http/route.js';
import { toUserRead } from './users.mapper.js';
import * as transfer from '../transfer/transfer.service.js';
import * as users from './users.service.js';

const tag = 'users';
const forbidden403 = { description: 'Not allowed' };
const notFound404 = { description: 'No such user' };

// Literal paths come before `/users/:id`, which would otherwise claim them.
export function userRoutes(ctx: GatewayContext): AnyRoute[] {
  return [
    route({
      method: 'get',
      path: '/users',
      tag,
      auth: 'user',
      summary:
        'List users: all for a superuser; for others, themselves and the people sharing an environment with them, whose is_superuser reads false and active_env_id null (not disclosed). `email` narrows that set to one exact address (case-insensitive) and never finds anyone outside it',
      query: UserListQuery,
      responses: { 200: { description: 'A page of users', schema: UserPage } },
      handler: async ({ principal, query }) => ok(await users.listUsers(ctx, principal, query)),
    }),
    route({
      method: 'get',
      path: '/users/me',
      tag,
      auth: 'user',
      summary: 'The caller',
      responses: { 200: { description: 'The caller', schema: UserRead } },
      handler: async ({ principal }) => ok(toUserRead(principal.user)),
    }),
    route({
      method: 'patch',
      path: '/users/me',
      tag,
      auth: 'user',
      summary:
        'Update the caller (only superusers change is_active, is_superuser, is_verified). A new password ends every other token of the caller at once; the token of this request stays valid',
      body: UserSafeUpdate,
      documentedBody: ctx.passwords.documented(UserSafeUpdate, 'password'),
      responses: {
        200: { description: 'Updated', schema: UserRead },
        400: { description: 'UPDATE_USER_EMAIL_ALREADY_EXISTS or UPDATE_USER_INVALID_PASSWORD' },
        403: forbidden403,
        409: { description: 'Would leave no active superuser' },
      },
      handler: async ({ principal, body }) =>
        ok(await users.updateUser(ctx, principal, principal.user, body)),
    }),
    route({
      method: 'post',
      path: '/users/me/change-password',
      tag,
      auth: 'user',
      summary:
        'Change the caller’s password. Every other token of the caller stops working at once; the token of this request stays valid',
      body: UserPasswordChange,
      documentedBody: ctx.passwords.documented(UserPasswordChange, 'new_password'),
      responses: {
        200: { description: 'Changed', schema: UserRead },
        400: { description: 'CHANGE_PASSWORD_BAD_PASSWORD or UPDATE_USER_INVALID_PASSWORD' },
      },
      handler: async ({ principal, body }) =>
        ok(await users.changePassword(ctx, principal, body.old_password, body.new_password)),
    }),
    route({
      method: 'post',
      path: '/users/me/service-account-token',
      tag,
      auth: 'user',
      summary:
        'Create a long-lived service-account token bound to the active environment (and optionally a team)',
      body: ServiceAccountTokenCreate,
      responses: {
        201: { description: 'Created; the token is shown once', schema: ServiceAccountTokenCreated },
        403: forbidden403,
      },
      handler: async ({ principal, body }) =>
        created(await users.createServiceAccountToken(ctx, principal, body)),
    }),
    route({
      method: 'get',
      path: '/users/me/service-account-tokens',
      tag,
      auth: 'user',
      summary: 'The caller’s service-account tokens (without the tokens themselves)',
      responses: { 200: { description: 'Tokens', schema: ServiceAccountTokenList } },
      handler: async ({ principal }) => ok(await users.listServiceAccountTokens(ctx, principal)),
    }),
    route({
      method: 'delete',
      path: '/users/me/service-account-tokens/:id',
      tag,
      auth: 'user',
      summary: 'Revoke a service-account token; it stops working at once',
      params: IdParams,
      responses: {
        204: { description: 'Revoked' },
        403: forbidden403,
        404: { description: 'No such token' },
      },
      handler: async ({ principal, params }) => {
        await users.revokeServiceAccountToken(ctx, principal, params.id);
        return noContent();
      },
    }),
    route({
      method: 'get',
      path: '/users/export-all',
      tag,
      auth: 'user',
      summary: 'Export users, environments, teams and memberships (superuser)',
      responses: { 200: { description: 'Everything', schema: ExportData }, 403: forbidden403 },
      handler: async ({ principal }) => {
        requireSuperuser(principal);
        return ok(await transfer.exportAll(ctx));
      },
    }),
    route({
      method: 'post',
      path: '/users/import-all',
      tag,
      auth: 'user',
      summary:
        'Replace users, environments, teams and memberships with a document (superuser, all or nothing)',
      description:
        'Teams and environments the document leaves out are deleted as DELETE /teams/{id} and ' +
        'DELETE /envs/{id} do: gone from every read at once, everything they own removed in the ' +
        'background as tracked deletions (GET /deletions/; docs/api.md "Deletions").',
      body: ExportData,
      responses: { 204: { description: 'Imported' }, 403: forbidden403 },
      handler: async ({ principal, body }) => {
        requireSuperuser(principal);
        await transfer.importAll(ctx, principal, body);
        return noContent();
      },
    }),
    route({
      method: 'get',
      path: '/users/:id',
      tag,
      auth: 'user',
      summary: 'Read a user (oneself, or anyone for a superuser; 403 for another user)',
      params: IdParams,
      responses: { 200: { description: 'The user', schema: UserRead }, 403: forbidden403, 404: notFound404 },
      handler: async ({ principal, params }) => ok(await users.getUser(ctx, principal, params.id)),
    }),
    route({
      method: 'patch',
      path: '/users/:id',
      tag,
      auth: 'user',
      summary:
        'Update a user (superuser, or oneself). A new password set by a superuser ends every token of that user at once (set on oneself: every token but this request’s)',
      params: IdParams,
      body: UserSafeUpdate,
      documentedBody: ctx.passwords.documented(UserSafeUpdate, 'password'),
      responses: {
        200: { description: 'Updated', schema: UserRead },
        400: { description: 'UPDATE_USER_EMAIL_ALREADY_EXISTS or UPDATE_USER_INVALID_PASSWORD' },
        403: forbidden403,
        404: notFound404,
        409: { description: 'Would leave no active superuser' },
      },
      handler: async ({ principal, params, body }) =>
        ok(await users.updateUserById(ctx, principal, params.id, body)),
    }),
    route({
      method: 'delete',
      path: '/users/:id',
      tag,
      auth: 'user',
      summary: 'Delete a user (superuser)',
      params: IdParams,
      responses: {
        204: { description: 'Deleted' },
        403: forbidden403,
        404: notFound404,
        409: { description: 'Would leave no active superuser' },
      },
      handler: async ({ principal, params }) => {
        await users.deleteUser(ctx, principal, params.id);
        return noContent();
      },
    }),
  ];
}
