import type { TeamCreate, TeamMember, TeamRead, TeamUpdate } from '@sluice/shared/schemas';
import { envWithAccess, requireEnv, requireTeam } from '../../auth/access.js';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import type { TeamRow } from '../../db/schema.js';
import { conflict, forbidden, invalid, notFound, unprocessable } from '../../http/errors.js';
import { offsetOf, pageOf } from '../../http/pagination.js';
import { addEnvMember, setActiveEnvIfUnset } from '../envs/envs.repository.js';
import { recordTeamDeletion, startDeletions } from '../deletions/deletions.service.js';
import * as repo from './teams.repository.js';
import { isUniqueViolation } from '../../db/errors.js';
import { toIso } from '../../db/timestamps.js';

export function toTeamRead(t: TeamRow): TeamRead {
  return {
    id: t.id,
    name: t.name,
    description: t.description,
    env_id: t.env_id,
    created_at: toIso(t.created_at),
    updated_at: toIso(t.updated_at),
  };
}

const nameTaken = () => conflict('A team with this name already exists in the environment');

/** Teams live in one environment: `env_id` when given, else the caller's active one. */
function scopeEnv(p: Principal, envId: string | undefined): string {
  const id = envId ?? p.user.active_env_id;
  if (!id) {
    throw invalid(
      ['query', 'env_id'],
      'No environment selected: pass env_id or set active_env_id on your user',
      'missing',
    );
  }
  return id;
}

export async function listTeams(
  ctx: GatewayContext,
  p: Principal,
  q: { page: number; size: number; env_id?: string },
) {
  const envId = scopeEnv(p, q.env_id);
  const { access } = await envWithAccess(ctx.db, p, envId);
  if (!access) throw forbidden('You are not a member of this environment');
  const admin = access === 'admin';
  const { rows, total } = await repo.listTeams(ctx.db, {
    envId,
    memberId: admin ? null : p.user.id,
    offset: offsetOf(q.page, q.size),
    limit: q.size,
  });
  return pageOf(rows.map(toTeamRead), total, q.page, q.size);
}

export async function getTeam(ctx: GatewayContext, p: Principal, id: string): Promise<TeamRead> {
  return toTeamRead(await requireTeam(ctx.db, p, id, 'member'));
}

export async function findTeamByName(ctx: GatewayContext, p: Principal, name: string, envIdParam?: string) {
  const envId = scopeEnv(p, envIdParam);
  await requireEnv(ctx.db, p, envId, 'member');
  const team = await repo.findTeamByName(ctx.db, envId, name);
  if (!team) throw notFound('Team not found');
  return toTeamRead(await requireTeam(ctx.db, p, team.id, 'member'));
}

/** Any member of the environment may create a team; the creator becomes its owner. */
export async function createTeam(ctx: GatewayContext, p: Principal, body: TeamCreate, envIdParam?: string) {
  const envId = scopeEnv(p, envIdParam);
  await requireEnv(ctx.db, p, envId, 'member');
  try {
    const team = await ctx.db.transaction().execute(async (trx) => {
      const team = await repo.insertTeam(trx, {
        env_id: envId,
        name: body.name,
        description: body.description ?? null,
      });
      await repo.addTeamMembers(trx, team.id, [p.user.id], true);
      return team;
    });
    return toTeamRead(team);
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken();
    throw err;
  }
}

export async function updateTeam(ctx: GatewayContext, p: Principal, id: string, body: TeamUpdate) {
  await requireTeam(ctx.db, p, id, 'owner');
  try {
    const team = await repo.updateTeam(ctx.db, id, body);
    if (!team) throw notFound('Team not found');
    return toTeamRead(team);
  } catch (err) {
    if (isUniqueViolation(err)) throw nameTaken();
    throw err;
  }
}

/**
 * The team goes at once, with a recorded deletion of everything it owns in
 * one transaction: from the commit on, the team and its objects are gone
 * from every read, and the deletion runner removes the objects (docs/api.md
 * "Deletions").
 */
export async function deleteTeam(ctx: GatewayContext, p: Principal, id: string): Promise<void> {
  const team = await requireTeam(ctx.db, p, id, 'owner');
  const deletion = await ctx.db.transaction().execute(async (trx) => {
    const recorded = await recordTeamDeletion(trx, team, p.user.id);
    if (!(await repo.deleteTeam(trx, id))) throw notFound('Team not found');
    return recorded;
  });
  startDeletions(ctx, [deletion]);
}

export async function listMembers(ctx: GatewayContext, p: Principal, id: string): Promise<TeamMember[]> {
  await requireTeam(ctx.db, p, id, 'member');
  const rows = await repo.listTeamMembers(ctx.db, id);
  return rows.map((r) => ({ id: r.id, email: r.email, role: r.admin ? 'owner' : 'member' }));
}

/**
 * Owners add members; a new member also joins the team's environment, which
 * becomes their active one if they had none.
 */
export async function addMembers(
  ctx: GatewayContext,
  p: Principal,
  id: string,
  userIds: string[],
): Promise<void> {
  const team = await requireTeam(ctx.db, p, id, 'owner');
  const known = await repo.findExistingUserIds(ctx.db, userIds);
  const unknown = userIds.flatMap((u, i) => (known.has(u) ? [] : [i]));
  if (unknown.length) {
    throw unprocessable(
      unknown.map((i) => ({ loc: ['body', 'members', i], msg: 'Unknown user', type: 'value_error' })),
    );
  }
  await ctx.db.transaction().execute(async (trx) => {
    await repo.addTeamMembers(trx, id, userIds, false);
    for (const u of userIds) await addEnvMember(trx, u, team.env_id, false);
    await setActiveEnvIfUnset(trx, userIds, team.env_id);
  });
}

/** Owners remove anyone; members may leave; the last owner stays. */
export async function removeMember(
  ctx: GatewayContext,
  p: Principal,
  id: string,
  userId: string,
): Promise<void> {
  const self = userId === p.user.id;
  await requireTeam(ctx.db, p, id, self ? 'member' : 'owner');
  const membership = await repo.findTeamMembership(ctx.db, userId, id);
  if (!membership) throw notFound('Not a member of this team');
  if (membership.admin && (await repo.countTeamOwners(ctx.db, id)) <= 1) {
    throw conflict('A team must keep at least one owner');
  }
  if (!(await repo.removeTeamMember(ctx.db, id, userId))) throw notFound('Not a member of this team');
}
