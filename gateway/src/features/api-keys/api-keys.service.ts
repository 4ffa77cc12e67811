import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { ApiKeyCreate, BearerResponse } from '@sluice/shared/schemas';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import { badRequest, notFound, unprocessable } from '../../http/errors.js';
import { addEnvMember } from '../envs/envs.repository.js';
import { insertUser, updateUser } from '../users/users.repository.js';
import { unusablePassword } from '../users/users.service.js';
import * as repo from './api-keys.repository.js';
import { toIso, toIsoOrNull } from '../../db/timestamps.js';

/** Spec 5.6: tokens exchanged for a key last 10 minutes. */
export const API_KEY_TOKEN_LIFETIME_S = 600;
export const SELF_HOSTED_ONLY = 'API key login is only available in SELF_HOSTED mode';

const hashKey = (key: string) => createHash('sha256').update(key).digest('hex');

function toApiKeyRead(r: repo.ApiKeyRow) {
  return {
    id: r.id,
    name: r.name,
    prefix: r.prefix,
    env_ids: (typeof r.env_ids === 'string' ? JSON.parse(r.env_ids) : r.env_ids) as string[],
    admin: r.admin,
    created_at: toIso(r.created_at),
    last_used_at: toIsoOrNull(r.last_used_at),
    revoked: r.revoked_at !== null,
  };
}

export function requireSelfHosted(ctx: GatewayContext): void {
  if (ctx.config.deploymentMode !== 'SELF_HOSTED') throw badRequest(SELF_HOSTED_ONLY);
}

/**
 * An organisation API key (`psk_…`) acts as its own system user, a member
 * (or admin) of the environments it grants. The key is shown once and only
 * its SHA-256 is stored: it is 256 random bits, so a slow hash adds nothing.
 */
export async function createApiKey(ctx: GatewayContext, p: Principal, body: ApiKeyCreate) {
  requireSelfHosted(ctx);
  const known = await repo.findExistingEnvIds(ctx.db, body.env_ids);
  const missing = body.env_ids.flatMap((id, i) => (known.has(id) ? [] : [i]));
  if (missing.length) {
    throw unprocessable(
      missing.map((i) => ({ loc: ['body', 'env_ids', i], msg: 'Unknown environment', type: 'value_error' })),
    );
  }
  const key = `psk_${randomBytes(32).toString('base64url')}`;
  const admin = body.admin ?? false;
  const row = await ctx.db.transaction().execute(async (trx) => {
    const user = await insertUser(trx, {
      email: `apikey-${randomUUID()}@service-accounts.sluice.invalid`,
      hashed_password: unusablePassword(),
      is_active: true,
      is_superuser: false,
      is_verified: true,
      is_service_account: true,
      active_env_id: body.env_ids[0] ?? null,
      tokens_valid_after: null,
    });
    for (const envId of body.env_ids) await addEnvMember(trx, user.id, envId, admin);
    return repo.insertApiKey(trx, {
      name: body.name,
      prefix: key.slice(0, 12),
      key_hash: hashKey(key),
      user_id: user.id,
      created_by: p.user.id,
      admin,
      env_ids: body.env_ids,
    });
  });
  return { ...toApiKeyRead(row), key };
}

export async function listApiKeys(ctx: GatewayContext) {
  requireSelfHosted(ctx);
  return (await repo.listApiKeys(ctx.db)).map(toApiKeyRead);
}

/** Revoking deactivates the key's user, so tokens already exchanged stop too. */
export async function revokeApiKey(ctx: GatewayContext, id: string): Promise<void> {
  requireSelfHosted(ctx);
  const row = await repo.findApiKey(ctx.db, id);
  if (!row) throw notFound('API key not found');
  await ctx.db.transaction().execute(async (trx) => {
    await repo.markApiKeyRevoked(trx, id);
    await updateUser(trx, row.user_id, { is_active: false });
  });
}

export async function exchangeApiKey(ctx: GatewayContext, key: string): Promise<BearerResponse> {
  requireSelfHosted(ctx);
  const row = await repo.findApiKeyByHash(ctx.db, hashKey(key));
  if (!row || row.revoked_at) throw badRequest('LOGIN_BAD_CREDENTIALS');
  await repo.touchApiKey(ctx.db, row.id);
  const t = ctx.tokens.issue(row.user_id, 'api-key', API_KEY_TOKEN_LIFETIME_S);
  return { access_token: t.token, token_type: 'bearer', expires_in: t.expiresIn };
}
