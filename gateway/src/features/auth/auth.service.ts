import { createHash, randomBytes } from 'node:crypto';
import type { BearerResponse, UserCreate, UserRead } from '@sluice/shared/schemas';
import {
  consumeActionToken,
  deleteActionTokens,
  findActionToken,
  insertActionToken,
  revokeToken,
} from '../../auth/auth.repository.js';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import { badRequest } from '../../http/errors.js';
import { findUserByEmail, findUserById, insertUser, updateUser } from '../users/users.repository.js';
import { toUserRead } from '../users/users.mapper.js';
import { isUniqueViolation } from '../../db/errors.js';

const ACTION_TOKEN_TTL_MS = 3600 * 1000;
const hashToken = (token: string) => createHash('sha256').update(token).digest('hex');

export function bearer(ctx: GatewayContext, userId: string): BearerResponse {
  const t = ctx.tokens.issue(userId, 'access');
  return { access_token: t.token, token_type: 'bearer', expires_in: t.expiresIn };
}

/**
 * A new token of the caller's kind. A login token gets a full lifetime; a
 * token exchanged for an API key (10 minutes) or a service-account token
 * keeps the expiry of the token presented, so refreshing never stretches
 * what the key or the service account granted: past it, the key must be
 * exchanged again.
 */
export function refresh(ctx: GatewayContext, p: Principal): BearerResponse {
  if (p.tokenKind === 'access') return bearer(ctx, p.user.id);
  const left = Math.max(1, p.tokenExp - Math.floor(Date.now() / 1000));
  const t = ctx.tokens.issue(p.user.id, p.tokenKind, left);
  return { access_token: t.token, token_type: 'bearer', expires_in: t.expiresIn };
}

export async function register(ctx: GatewayContext, body: UserCreate): Promise<UserRead> {
  ctx.passwords.check(body.password, 'REGISTER_INVALID_PASSWORD', body.email);
  if (await findUserByEmail(ctx.db, body.email)) throw badRequest('REGISTER_USER_ALREADY_EXISTS');
  // Self-registration: the server decides the flags, whatever the body says (spec 2.2).
  let user;
  try {
    user = await insertUser(ctx.db, {
      email: body.email,
      hashed_password: await ctx.passwords.hash(body.password),
      is_active: true,
      is_superuser: false,
      is_verified: false,
      active_env_id: null,
      tokens_valid_after: null,
    });
  } catch (err) {
    // Two registrations racing for one address: the unique index decides.
    if (isUniqueViolation(err)) throw badRequest('REGISTER_USER_ALREADY_EXISTS');
    throw err;
  }
  await sendVerification(ctx, user.id, user.email);
  return toUserRead(user);
}

export async function login(ctx: GatewayContext, email: string, password: string): Promise<BearerResponse> {
  const user = await findUserByEmail(ctx.db, email);
  const ok = await ctx.passwords.verify(password, user?.hashed_password);
  // An inactive account or a service account answers exactly like a wrong password.
  if (!user || !ok || !user.is_active || user.is_service_account) throw badRequest('LOGIN_BAD_CREDENTIALS');
  if (ctx.config.requireVerified && !user.is_verified) throw badRequest('LOGIN_USER_NOT_VERIFIED');
  return bearer(ctx, user.id);
}

export async function logout(ctx: GatewayContext, p: Principal): Promise<void> {
  await revokeToken(ctx.db, p.tokenId, new Date(p.tokenExp * 1000));
}

export async function forgotPassword(ctx: GatewayContext, email: string): Promise<void> {
  const user = await findUserByEmail(ctx.db, email);
  if (!user || !user.is_active || user.is_service_account) return;
  const token = randomBytes(32).toString('base64url');
  await insertActionToken(ctx.db, {
    token_hash: hashToken(token),
    user_id: user.id,
    purpose: 'reset',
    expires_at: new Date(Date.now() + ACTION_TOKEN_TTL_MS),
  });
  await ctx.mailer.send({
    to: user.email,
    subject: 'Reset your Sluice password',
    text: `Use this token with POST /api/auth/reset-password within one hour:\n\n${token}\n`,
    token,
  });
}

export async function resetPassword(ctx: GatewayContext, token: string, password: string): Promise<void> {
  const tokenHash = hashToken(token);
  const row = await findActionToken(ctx.db, tokenHash, 'reset');
  if (!row || new Date(row.expires_at).getTime() < Date.now()) throw badRequest('RESET_PASSWORD_BAD_TOKEN');
  const user = await findUserById(ctx.db, row.user_id);
  if (!user || !user.is_active) throw badRequest('RESET_PASSWORD_BAD_TOKEN');
  // A refused password leaves the token usable: the user retries with the same mail.
  ctx.passwords.check(password, 'RESET_PASSWORD_INVALID_PASSWORD', user.email);
  // Single use: of two concurrent requests with one token, only one consumes it.
  if (!(await consumeActionToken(ctx.db, tokenHash, 'reset'))) throw badRequest('RESET_PASSWORD_BAD_TOKEN');
  await setPassword(ctx, user.id, password, null);
}

/**
 * The columns a password change writes: the new hash, and the end of every
 * token issued before now (milliseconds, like the tokens' `iat`) except
 * `keepJti`, the token a user changed their own password with.
 */
export async function passwordPatch(ctx: GatewayContext, password: string, keepJti: string | null) {
  return {
    hashed_password: await ctx.passwords.hash(password),
    tokens_valid_after: new Date(),
    tokens_kept_jti: keepJti,
  };
}

/**
 * Changes a password and ends what the old one allowed, in one transaction:
 * the reset tokens mailed before, and every session but `keepJti`'s.
 */
export async function setPassword(
  ctx: GatewayContext,
  userId: string,
  password: string,
  keepJti: string | null,
) {
  const patch = await passwordPatch(ctx, password, keepJti);
  return ctx.db.transaction().execute(async (trx) => {
    await deleteActionTokens(trx, userId, 'reset');
    return updateUser(trx, userId, patch);
  });
}

export async function sendVerification(ctx: GatewayContext, userId: string, email: string): Promise<void> {
  const token = randomBytes(32).toString('base64url');
  await insertActionToken(ctx.db, {
    token_hash: hashToken(token),
    user_id: userId,
    purpose: 'verify',
    expires_at: new Date(Date.now() + ACTION_TOKEN_TTL_MS),
  });
  await ctx.mailer.send({
    to: email,
    subject: 'Verify your Sluice account',
    text: `Use this token with POST /api/auth/verify within one hour:\n\n${token}\n`,
    token,
  });
}

export async function requestVerifyToken(ctx: GatewayContext, email: string): Promise<void> {
  const user = await findUserByEmail(ctx.db, email);
  if (!user || !user.is_active || user.is_verified || user.is_service_account) return;
  await sendVerification(ctx, user.id, user.email);
}

export async function verify(ctx: GatewayContext, token: string): Promise<UserRead> {
  const row = await consumeActionToken(ctx.db, hashToken(token), 'verify');
  if (!row || new Date(row.expires_at).getTime() < Date.now()) throw badRequest('VERIFY_USER_BAD_TOKEN');
  const user = await findUserById(ctx.db, row.user_id);
  if (!user || !user.is_active) throw badRequest('VERIFY_USER_BAD_TOKEN');
  if (user.is_verified) throw badRequest('VERIFY_USER_ALREADY_VERIFIED');
  const updated = await updateUser(ctx.db, user.id, { is_verified: true });
  await deleteActionTokens(ctx.db, user.id, 'verify');
  return toUserRead(updated ?? user);
}
