import {
  BearerResponse,
  EmailBody,
  ErrorBody,
  LoginForm,
  ResetPasswordBody,
  UserCreate,
  UserRead,
  VerifyBody,
} from '@sluice/shared';
import type { GatewayContext } from '../../context.js';
import { notFound } from '../../http/errors.js';
import { loginLimiters } from '../../http/rate-limit.js';
import { accepted, created, emptyOk, ok, route, type AnyRoute } from '../../http/route.js';
import * as auth from './auth.service.js';

const tag = 'auth';

export function authRoutes(ctx: GatewayContext): AnyRoute[] {
  const limit = loginLimiters({
    perAccount: ctx.config.loginMaxPerAccount,
    perAddress: ctx.config.loginMaxPerAddress,
    windowS: ctx.config.loginWindowS,
  });
  return [
    route({
      method: 'post',
      path: '/auth/register',
      tag,
      auth: 'public',
      summary: 'Register a user (404 when self-registration is off)',
      body: UserCreate,
      // Disabled registration does not exist: 404 whatever the body, before validation.
      before: [(_req, _res, next) => next(ctx.config.allowRegistration ? undefined : notFound())],
      responses: {
        201: { description: 'Registered', schema: UserRead },
        400: { description: 'REGISTER_USER_ALREADY_EXISTS or REGISTER_INVALID_PASSWORD' },
        404: { description: 'Registration is disabled' },
      },
      handler: async ({ body }) => created(await auth.register(ctx, body)),
    }),
    route({
      method: 'post',
      path: '/auth/jwt/login',
      tag,
      auth: 'public',
      summary: 'Log in with the OAuth2 password form (username is the e-mail)',
      body: LoginForm,
      bodyEncoding: 'form',
      before: limit,
      responses: {
        200: { description: 'Bearer token', schema: BearerResponse },
        400: { description: 'LOGIN_BAD_CREDENTIALS or LOGIN_USER_NOT_VERIFIED' },
        429: { description: 'Too many attempts; see Retry-After', schema: ErrorBody },
      },
      handler: async ({ body }) => ok(await auth.login(ctx, body.username, body.password)),
    }),
    route({
      method: 'post',
      path: '/auth/jwt/logout',
      tag,
      auth: 'user',
      summary: 'Log out: the token stops working at once',
      responses: { 200: { description: 'Logged out (empty body)' } },
      handler: async ({ principal }) => {
        await auth.logout(ctx, principal);
        return emptyOk();
      },
    }),
    route({
      method: 'post',
      path: '/auth/jwt/refresh',
      tag,
      auth: 'user',
      summary: 'A fresh token for the caller (the old one stays valid until it expires)',
      responses: { 200: { description: 'Bearer token', schema: BearerResponse } },
      handler: async ({ principal }) => ok(auth.bearer(ctx, principal.user.id)),
    }),
    route({
      method: 'post',
      path: '/auth/forgot-password',
      tag,
      auth: 'public',
      summary: 'Mail a password-reset token (always 202, known address or not)',
      body: EmailBody,
      responses: { 202: { description: 'Accepted (empty body)' } },
      handler: async ({ body }) => {
        await auth.forgotPassword(ctx, body.email);
        return accepted();
      },
    }),
    route({
      method: 'post',
      path: '/auth/reset-password',
      tag,
      auth: 'public',
      summary: 'Set a new password with a reset token (single use, one hour)',
      body: ResetPasswordBody,
      responses: {
        200: { description: 'Password changed (empty body)' },
        400: { description: 'RESET_PASSWORD_BAD_TOKEN or RESET_PASSWORD_INVALID_PASSWORD' },
      },
      handler: async ({ body }) => {
        await auth.resetPassword(ctx, body.token, body.password);
        return emptyOk();
      },
    }),
    route({
      method: 'post',
      path: '/auth/request-verify-token',
      tag,
      auth: 'public',
      summary: 'Mail a verification token (always 202)',
      body: EmailBody,
      responses: { 202: { description: 'Accepted (empty body)' } },
      handler: async ({ body }) => {
        await auth.requestVerifyToken(ctx, body.email);
        return accepted();
      },
    }),
    route({
      method: 'post',
      path: '/auth/verify',
      tag,
      auth: 'public',
      summary: 'Verify an account with its token',
      body: VerifyBody,
      responses: {
        200: { description: 'Verified user', schema: UserRead },
        400: { description: 'VERIFY_USER_BAD_TOKEN or VERIFY_USER_ALREADY_VERIFIED' },
      },
      handler: async ({ body }) => ok(await auth.verify(ctx, body.token)),
    }),
  ];
}
