import {
  ApiKeyCreate,
  ApiKeyCreated,
  ApiKeyList,
  ApiKeyLogin,
  BearerResponse,
  ErrorBody,
} from '@sluice/shared/schemas';
import { requireSuperuser } from '../../auth/access.js';
import type { GatewayContext } from '../../context.js';
import { IdParams } from '../../http/params.js';
import { loginLimiters } from '../../auth/rate-limits.js';
import { created, noContent, ok, route, type AnyRoute } from '../../http/route.js';
import * as keys from './api-keys.service.js';

const tag = 'api-keys';

export function apiKeyRoutes(ctx: GatewayContext): AnyRoute[] {
  const selfHostedOnly = { description: `${keys.SELF_HOSTED_ONLY} (other modes)` };
  return [
    route({
      method: 'post',
      path: '/api-keys',
      tag,
      auth: 'user',
      summary: 'Create an organisation API key granting environments (superuser, SELF_HOSTED); shown once',
      body: ApiKeyCreate,
      responses: {
        201: { description: 'Created; `key` is shown only now', schema: ApiKeyCreated },
        400: selfHostedOnly,
        403: { description: 'Not a superuser' },
      },
      handler: async ({ principal, body }) => {
        requireSuperuser(principal);
        return created(await keys.createApiKey(ctx, principal, body));
      },
    }),
    route({
      method: 'get',
      path: '/api-keys',
      tag,
      auth: 'user',
      summary: 'List organisation API keys, without the keys (superuser)',
      responses: {
        200: { description: 'Keys', schema: ApiKeyList },
        400: selfHostedOnly,
        403: { description: 'Not a superuser' },
      },
      handler: async ({ principal }) => {
        requireSuperuser(principal);
        return ok(await keys.listApiKeys(ctx));
      },
    }),
    route({
      method: 'delete',
      path: '/api-keys/:id',
      tag,
      auth: 'user',
      summary: 'Revoke an API key; its tokens stop working at once (superuser)',
      params: IdParams,
      responses: {
        204: { description: 'Revoked' },
        400: selfHostedOnly,
        403: { description: 'Not a superuser' },
        404: { description: 'No such key' },
      },
      handler: async ({ principal, params }) => {
        requireSuperuser(principal);
        await keys.revokeApiKey(ctx, params.id);
        return noContent();
      },
    }),
    route({
      method: 'post',
      path: '/auth/api-key/token',
      tag: 'auth',
      auth: 'public',
      summary:
        'Exchange an organisation API key for a 10-minute bearer token (SELF_HOSTED only); refreshing it never extends those 10 minutes',
      body: ApiKeyLogin,
      before: [
        (_req, _res, next) => {
          try {
            keys.requireSelfHosted(ctx);
            next();
          } catch (err) {
            next(err);
          }
        },
        ...loginLimiters({
          perAccount: ctx.config.loginMaxPerAccount,
          perAddress: ctx.config.loginMaxPerAddress,
          windowS: ctx.config.loginWindowS,
        }),
      ],
      responses: {
        200: { description: 'Bearer token', schema: BearerResponse },
        400: { description: `LOGIN_BAD_CREDENTIALS, or: ${keys.SELF_HOSTED_ONLY}` },
        429: {
          description:
            'LOGIN_TOO_MANY_ATTEMPTS: too many failed attempts on this account from this client address, or too many attempts from this address; see Retry-After. Other addresses are not affected',
          schema: ErrorBody,
        },
      },
      handler: async ({ body }) => ok(await keys.exchangeApiKey(ctx, body.api_key)),
    }),
  ];
}
