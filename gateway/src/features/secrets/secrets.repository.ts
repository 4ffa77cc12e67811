import { isUuid } from '@sluice/shared/schemas';
import type { Db } from '../../db/database.js';

// The team facts a secret grant is checked against (docs/security.md,
// "Secret references"): which environment a team is in, which teams a user
// acts for.

// Ids are UUID columns: anything else names nothing (and must not reach SQL as a uuid).
const uuids = (ids: readonly string[]) => [...new Set(ids)].filter(isUuid);

export interface TeamPlace {
  teamId: string;
  envId: string;
}

/** The teams with their environments, for those of `teamIds` that exist. */
export async function placesOfTeams(db: Db, teamIds: readonly string[]): Promise<TeamPlace[]> {
  const ids = uuids(teamIds);
  if (ids.length === 0) return [];
  const rows = await db.selectFrom('teams').select(['id', 'env_id']).where('id', 'in', ids).execute();
  return rows.map((r) => ({ teamId: r.id, envId: r.env_id }));
}

/** The teams a user may act for: those they belong to and every team of the environments they administer. */
export async function placesOfUser(db: Db, userId: string): Promise<TeamPlace[]> {
  const rows = await db
    .selectFrom('teams')
    .select(['teams.id', 'teams.env_id'])
    .where((eb) =>
      eb.or([
        eb.exists(
          eb
            .selectFrom('team_members as tm')
            .select('tm.team_id')
            .whereRef('tm.team_id', '=', 'teams.id')
            .where('tm.user_id', '=', userId),
        ),
        eb.exists(
          eb
            .selectFrom('env_members as em')
            .select('em.env_id')
            .whereRef('em.env_id', '=', 'teams.env_id')
            .where('em.user_id', '=', userId)
            .where('em.admin', '=', true),
        ),
      ]),
    )
    .execute();
  return rows.map((r) => ({ teamId: r.id, envId: r.env_id }));
}

/** The ids that name no team. */
export async function unknownTeams(db: Db, ids: readonly string[]): Promise<string[]> {
  const found = new Set((await placesOfTeams(db, ids)).map((p) => p.teamId));
  return ids.filter((id) => !found.has(id));
}

/** The ids that name no environment. */
export async function unknownEnvs(db: Db, ids: readonly string[]): Promise<string[]> {
  if (uuids(ids).length === 0) return [...ids];
  const rows = await db.selectFrom('envs').select('id').where('id', 'in', uuids(ids)).execute();
  const found = new Set(rows.map((r) => r.id));
  return ids.filter((id) => !found.has(id));
}
