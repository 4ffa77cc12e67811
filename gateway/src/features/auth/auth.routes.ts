import {
  BearerResponse,
  EmailBody,
  ErrorBody,
  LoginForm,
  ResetPasswordBody,
  UserCreate,
  UserRead,
  VerifyBody,
} from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { notFound } from '../../http/errors.js';
import { loginLimiters, mailLimiters, mailSuppressed } from '../../auth/rate-limits.js';
import { accepted, created, emptyOk, ok, route, type AnyRoute } from '../../http/route.js';
import * as auth from './auth.service.js';

const tag = 'auth';

export function authRoutes(ctx: GatewayContext): AnyRoute[] {
  const limit = loginLimiters({
    perAccount: ctx.config.loginMaxPerAccount,
    perAddress: ctx.config.loginMaxPerAddress,
    windowS: ctx.config.loginWindowS,
  });
  // One pair of throttles per mailing route: a reset mail does not use up the verification mails.
  const mailLimits = () =>
    mailLimiters({
      perAccount: ctx.config.mailMaxPerAccount,
      perAddress: ctx.config.mailMaxPerAddress,
      windowS: ctx.config.mailWindowS,
    });
  const tooManyMails = {
    description: 'Too many requests from this address; see Retry-After',
    schema: ErrorBody,
  };
  return [
    route({
      method: 'post',
      path: '/auth/register',
      tag,
      auth: 'public',
      summary: 'Register a user (404 when self-registration is off)',
      body: UserCreate,
      documentedBody: ctx.passwords.documented(UserCreate, 'password'),
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
        429: {
          description:
            'LOGIN_TOO_MANY_ATTEMPTS: too many failed attempts on this account from this client address, or too many attempts from this address; see Retry-After. Other addresses are not affected',
          schema: ErrorBody,
        },
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
      summary:
        'A fresh token of the same kind (the old one stays valid until it expires). A login token gets a full lifetime; an API-key or service-account token keeps its expiry',
      responses: { 200: { description: 'Bearer token', schema: BearerResponse } },
      handler: async ({ principal }) => ok(auth.refresh(ctx, principal)),
    }),
    route({
      method: 'post',
      path: '/auth/forgot-password',
      tag,
      auth: 'public',
      summary:
        'Mail a password-reset token (202, known address or not; past the limit per e-mail address the mail is not sent, past the limit per client address 429)',
      body: EmailBody,
      before: mailLimits(),
      responses: { 202: { description: 'Accepted (empty body)' }, 429: tooManyMails },
      handler: async ({ body, req }) => {
        if (!mailSuppressed(req)) await auth.forgotPassword(ctx, body.email);
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
      documentedBody: ctx.passwords.documented(ResetPasswordBody, 'password'),
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
      summary:
        'Mail a verification token (202, known address or not; past the limit per e-mail address the mail is not sent, past the limit per client address 429)',
      body: EmailBody,
      before: mailLimits(),
      responses: { 202: { description: 'Accepted (empty body)' }, 429: tooManyMails },
      handler: async ({ body, req }) => {
        if (!mailSuppressed(req)) await auth.requestVerifyToken(ctx, body.email);
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
