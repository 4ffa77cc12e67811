import { randomBytes, randomUUID } from 'node:crypto';
import type { ServiceAccountTokenCreate, UserRead, UserSafeUpdate } from '@sluice/shared/schemas';
import { requireTeam } from '../../auth/access.js';
import { deleteActionTokens } from '../../auth/auth.repository.js';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import type { UserPatch, UserRow } from '../../db/schema.js';
import { badRequest, conflict, forbidden, invalid, notFound } from '../../http/errors.js';
import { offsetOf, pageOf } from '../../http/pagination.js';
import { passwordPatch, setPassword } from '../auth/auth.service.js';
import { addEnvMember, findEnvMembership, findEnvWithMembership } from '../envs/envs.repository.js';
import { addTeamMembers } from '../teams/teams.repository.js';
import { toOtherUserRead, toUserRead } from './users.mapper.js';
import * as repo from './users.repository.js';
import { isUniqueViolation } from '../../db/errors.js';
import { toIso } from '../../db/timestamps.js';

export async function listUsers(
  ctx: GatewayContext,
  p: Principal,
  q: { page: number; size: number; email?: string },
) {
  const { rows, total } = await repo.listUsers(ctx.db, {
    viewerId: p.user.is_superuser ? null : p.user.id,
    email: q.email,
    offset: offsetOf(q.page, q.size),
    limit: q.size,
  });
  const read = (u: UserRow) =>
    p.user.is_superuser || u.id === p.user.id ? toUserRead(u) : toOtherUserRead(u);
  return pageOf(rows.map(read), total, q.page, q.size);
}

/** A user may read themselves; a superuser anyone. */
export async function getUser(ctx: GatewayContext, p: Principal, id: string): Promise<UserRead> {
  if (id !== p.user.id && !p.user.is_superuser) {
    if (!(await repo.findUserById(ctx.db, id))) throw notFound('User not found');
    throw forbidden('Only a superuser can read other users');
  }
  const user = await repo.findUserById(ctx.db, id);
  if (!user) throw notFound('User not found');
  return toUserRead(user);
}

const PRIVILEGED = ['is_active', 'is_superuser', 'is_verified'] as const;

/**
 * UserSafeUpdate for oneself (`/users/me`) or, by a superuser, for anyone.
 * Only superusers change the three privilege flags; leaving no active
 * superuser is refused; a new e-mail address is unverified again.
 */
export async function updateUser(
  ctx: GatewayContext,
  p: Principal,
  target: UserRow,
  body: UserSafeUpdate,
): Promise<UserRead> {
  const patch: UserPatch = {};
  for (const flag of PRIVILEGED) {
    const v = body[flag];
    if (v === undefined || v === null || v === target[flag]) continue;
    if (!p.user.is_superuser) throw forbidden(`Only a superuser can change ${flag}`);
    patch[flag] = v;
  }
  if (body.email && body.email.toLowerCase() !== target.email) {
    const other = await repo.findUserByEmail(ctx.db, body.email);
    if (other && other.id !== target.id) throw badRequest('UPDATE_USER_EMAIL_ALREADY_EXISTS');
    patch.email = body.email.toLowerCase();
    if (body.is_verified !== true || !p.user.is_superuser) patch.is_verified = false;
  }
  if (body.active_env_id !== undefined) {
    if (body.active_env_id !== null) {
      // A superuser may pick any environment, one that exists.
      const env = await findEnvWithMembership(ctx.db, body.active_env_id, target.id);
      if (!env) throw invalid(['body', 'active_env_id'], 'No such environment');
      if (env.member_admin === null && !target.is_superuser)
        throw invalid(['body', 'active_env_id'], 'The user is not a member of this environment');
    }
    patch.active_env_id = body.active_env_id;
  }
  if (body.password) {
    ctx.passwords.check(body.password, 'UPDATE_USER_INVALID_PASSWORD', patch.email ?? target.email);
    // Every other session of the user ends; one's own change keeps the token it was made with.
    Object.assign(patch, await passwordPatch(ctx, body.password, target.id === p.user.id ? p.tokenId : null));
  }
  const demotes =
    target.is_superuser && target.is_active && (patch.is_superuser === false || patch.is_active === false);
  if (demotes && (await repo.countActiveSuperusers(ctx.db)) <= 1) {
    throw conflict('At least one active superuser must remain');
  }
  let updated: UserRow | undefined = target;
  try {
    if (Object.keys(patch).length) {
      updated = await ctx.db.transaction().execute(async (trx) => {
        // Verification tokens were mailed to the old address: they must not verify the new one.
        if (patch.email) await deleteActionTokens(trx, target.id, 'verify');
        // Reset tokens were sent for the old password.
        if (patch.hashed_password) await deleteActionTokens(trx, target.id, 'reset');
        return repo.updateUser(trx, target.id, patch);
      });
    }
  } catch (err) {
    if (isUniqueViolation(err)) throw badRequest('UPDATE_USER_EMAIL_ALREADY_EXISTS');
    throw err;
  }
  if (!updated) throw notFound('User not found');
  return toUserRead(updated);
}

export async function updateUserById(ctx: GatewayContext, p: Principal, id: string, body: UserSafeUpdate) {
  const target = await repo.findUserById(ctx.db, id);
  if (!target) throw notFound('User not found');
  if (id !== p.user.id && !p.user.is_superuser) throw forbidden('Only a superuser can change other users');
  return updateUser(ctx, p, target, body);
}

export async function deleteUser(ctx: GatewayContext, p: Principal, id: string): Promise<void> {
  const target = await repo.findUserById(ctx.db, id);
  if (!target) throw notFound('User not found');
  if (!p.user.is_superuser) throw forbidden('Only a superuser can delete users');
  if (target.is_superuser && target.is_active && (await repo.countActiveSuperusers(ctx.db)) <= 1) {
    throw conflict('At least one active superuser must remain');
  }
  await repo.deleteUser(ctx.db, id);
}

export async function changePassword(
  ctx: GatewayContext,
  p: Principal,
  oldPassword: string,
  newPassword: string,
): Promise<UserRead> {
  if (!(await ctx.passwords.verify(oldPassword, p.user.hashed_password))) {
    throw badRequest('CHANGE_PASSWORD_BAD_PASSWORD');
  }
  ctx.passwords.check(newPassword, 'UPDATE_USER_INVALID_PASSWORD', p.user.email);
  // Every other session ends; the token this request came with stays (docs/api.md, "Sessions").
  const user = await setPassword(ctx, p.user.id, newPassword, p.tokenId);
  return toUserRead(user ?? p.user);
}

/** A password nobody knows: for system users, which never log in with one. */
export const unusablePassword = () => `!unusable!${randomBytes(24).toString('base64url')}`;

/**
 * Service-account tokens: a long-lived bearer token for automation (CI jobs,
 * GitOps controllers). Each token has its own system user, a member of the
 * caller's active environment and, if asked, of one team the caller owns; so
 * it can do no more than that membership allows. Revoking deactivates the
 * system user, which stops the token at once.
 */
export async function createServiceAccountToken(
  ctx: GatewayContext,
  p: Principal,
  body: ServiceAccountTokenCreate,
) {
  if (p.user.is_service_account) throw forbidden('A service account cannot create service-account tokens');
  const envId = p.user.active_env_id;
  if (!envId) throw invalid(['body'], 'Set an active environment first (PATCH /api/users/me active_env_id)');
  if (!p.user.is_superuser && !(await findEnvMembership(ctx.db, p.user.id, envId))) {
    throw forbidden('You are not a member of your active environment');
  }
  if (body.team_id) {
    const team = await requireTeam(ctx.db, p, body.team_id, 'owner', ['body', 'team_id']);
    if (team.env_id !== envId)
      throw invalid(['body', 'team_id'], 'The team is not in your active environment');
  }
  const id = randomUUID();
  const days = body.expires_in_days ?? 365;
  const expiresAt = new Date(Date.now() + days * 86400 * 1000);
  const name = body.name ?? `service-account-${id.slice(0, 8)}`;
  const row = await ctx.db.transaction().execute(async (trx) => {
    const sa = await repo.insertUser(trx, {
      email: `sa-${id}@service-accounts.sluice.invalid`,
      hashed_password: unusablePassword(),
      is_active: true,
      is_superuser: false,
      is_verified: true,
      is_service_account: true,
      active_env_id: envId,
      tokens_valid_after: null,
    });
    await addEnvMember(trx, sa.id, envId, false);
    if (body.team_id) await addTeamMembers(trx, body.team_id, [sa.id], false);
    return repo.insertServiceAccountToken(trx, {
      id,
      name,
      owner_id: p.user.id,
      user_id: sa.id,
      env_id: envId,
      team_id: body.team_id ?? null,
      expires_at: expiresAt,
    });
  });
  const t = ctx.tokens.issue(row.user_id, 'service', days * 86400, id);
  return { ...toServiceAccountToken(row), access_token: t.token, token_type: 'bearer' as const };
}

function toServiceAccountToken(r: repo.ServiceAccountTokenRow) {
  return {
    id: r.id,
    name: r.name,
    user_id: r.user_id,
    env_id: r.env_id,
    team_id: r.team_id,
    created_at: toIso(r.created_at),
    expires_at: toIso(r.expires_at),
    revoked: r.revoked_at !== null,
  };
}

export async function listServiceAccountTokens(ctx: GatewayContext, p: Principal) {
  return (await repo.listServiceAccountTokens(ctx.db, p.user.id)).map(toServiceAccountToken);
}

export async function revokeServiceAccountToken(
  ctx: GatewayContext,
  p: Principal,
  id: string,
): Promise<void> {
  const row = await repo.findServiceAccountToken(ctx.db, id);
  if (!row) throw notFound('Service-account token not found');
  if (row.owner_id !== p.user.id && !p.user.is_superuser) throw forbidden('This token is not yours');
  await ctx.db.transaction().execute(async (trx) => {
    await repo.markServiceAccountTokenRevoked(trx, id);
    await repo.updateUser(trx, row.user_id, { is_active: false });
  });
}
