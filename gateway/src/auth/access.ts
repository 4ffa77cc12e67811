import type { Db } from '../db/database.js';
import type { EnvRow, TeamRow } from '../db/schema.js';
import { findEnvWithMembership } from '../features/envs/envs.repository.js';
import { findTeamWithMembership } from '../features/teams/teams.repository.js';
import { forbidden, invalid, notFound } from '../http/errors.js';
import type { Principal } from './principal.js';

/**
 * The authorization rules, in one place (docs/api.md, "Permissions"):
 * - a missing resource is 404; an existing one the caller may not touch is 403
 *   (identifiers are random UUIDs, so the 403 leaks nothing guessable);
 * - superusers may do everything;
 * - environment admins have owner rights on every team of their environment;
 * - team owners manage their team and its members; members read.
 */
export type EnvAccess = 'admin' | 'member';
export type TeamAccess = 'owner' | 'member';

export function requireSuperuser(p: Principal): void {
  if (!p.user.is_superuser) throw forbidden('Only a superuser can do this');
}

/** The environment and the caller's access to it (undefined: not a member); 404 if missing. */
export async function envWithAccess(
  db: Db,
  p: Principal,
  envId: string,
): Promise<{ env: EnvRow; access: EnvAccess | undefined }> {
  const row = await findEnvWithMembership(db, envId, p.user.id);
  if (!row) throw notFound('Environment not found');
  const { member_admin, ...env } = row;
  const access: EnvAccess | undefined = p.user.is_superuser
    ? 'admin'
    : member_admin === null
      ? undefined
      : member_admin
        ? 'admin'
        : 'member';
  return { env, access };
}

export async function requireEnv(db: Db, p: Principal, envId: string, need: EnvAccess): Promise<EnvRow> {
  const { env, access } = await envWithAccess(db, p, envId);
  if (!access) throw forbidden('You are not a member of this environment');
  if (need === 'admin' && access !== 'admin') throw forbidden('Only an environment admin can do this');
  return env;
}

/**
 * The team, if the caller has `need` on it (else 403). A team that does not
 * exist is a 404 when the path or query names it; an id in the body (`loc`,
 * where it stands) that names nothing is a 422 at that field instead.
 */
export async function requireTeam(
  db: Db,
  p: Principal,
  teamId: string,
  need: TeamAccess,
  loc?: (string | number)[],
): Promise<TeamRow> {
  const row = await findTeamWithMembership(db, teamId, p.user.id);
  if (!row) throw loc ? invalid(loc, 'No such team') : notFound('Team not found');
  const { team_admin, env_admin, ...team } = row;
  const access: TeamAccess | undefined =
    p.user.is_superuser || env_admin || team_admin ? 'owner' : team_admin === null ? undefined : 'member';
  if (!access) throw forbidden('You are not a member of this team');
  if (need === 'owner' && access !== 'owner') throw forbidden('Only a team owner can do this');
  return team;
}
