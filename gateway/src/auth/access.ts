import type { Db } from '../db/database.js';
import type { EnvRow, TeamRow } from '../db/schema.js';
import { findEnv, findEnvMembership } from '../features/envs/envs.repository.js';
import { findTeam, findTeamMembership } from '../features/teams/teams.repository.js';
import { forbidden, notFound } from '../http/errors.js';
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

export async function envAccess(db: Db, p: Principal, envId: string): Promise<EnvAccess | undefined> {
  if (p.user.is_superuser) return 'admin';
  const m = await findEnvMembership(db, p.user.id, envId);
  return m ? (m.admin ? 'admin' : 'member') : undefined;
}

export async function requireEnv(db: Db, p: Principal, envId: string, need: EnvAccess): Promise<EnvRow> {
  const env = await findEnv(db, envId);
  if (!env) throw notFound('Environment not found');
  const access = await envAccess(db, p, envId);
  if (!access) throw forbidden('You are not a member of this environment');
  if (need === 'admin' && access !== 'admin') throw forbidden('Only an environment admin can do this');
  return env;
}

export async function teamAccess(db: Db, p: Principal, team: TeamRow): Promise<TeamAccess | undefined> {
  if (p.user.is_superuser) return 'owner';
  const [tm, em] = await Promise.all([
    findTeamMembership(db, p.user.id, team.id),
    findEnvMembership(db, p.user.id, team.env_id),
  ]);
  if (em?.admin || tm?.admin) return 'owner';
  return tm ? 'member' : undefined;
}

export async function requireTeam(db: Db, p: Principal, teamId: string, need: TeamAccess): Promise<TeamRow> {
  const team = await findTeam(db, teamId);
  if (!team) throw notFound('Team not found');
  const access = await teamAccess(db, p, team);
  if (!access) throw forbidden('You are not a member of this team');
  if (need === 'owner' && access !== 'owner') throw forbidden('Only a team owner can do this');
  return team;
}
