import type { Db } from '../../db/database.js';
import { countAllOf, fetchPage, fullCount } from '../../db/paging.js';
import type { TeamRow } from '../../db/schema.js';

export function findTeamByName(db: Db, envId: string, name: string): Promise<TeamRow | undefined> {
  return db
    .selectFrom('teams')
    .selectAll()
    .where('env_id', '=', envId)
    .where('name', '=', name)
    .executeTakeFirst();
}

export function findTeamMembership(db: Db, userId: string, teamId: string) {
  return db
    .selectFrom('team_members')
    .select('admin')
    .where('user_id', '=', userId)
    .where('team_id', '=', teamId)
    .executeTakeFirst();
}

/**
 * Teams of one environment a caller may see: every team for environment
 * admins (`memberId` null), otherwise the teams the caller belongs to.
 */
export async function listTeams(
  db: Db,
  opts: { envId: string; memberId: string | null; offset: number; limit: number },
): Promise<{ rows: TeamRow[]; total: number }> {
  let q = db.selectFrom('teams').where('env_id', '=', opts.envId);
  if (opts.memberId) {
    const member = opts.memberId;
    q = q.where('id', 'in', (eb) =>
      eb.selectFrom('team_members').select('team_id').where('user_id', '=', member),
    );
  }
  return fetchPage(
    () => q.selectAll().select(fullCount).orderBy('name').offset(opts.offset).limit(opts.limit).execute(),
    countAllOf(q),
    opts.offset,
  );
}

export function insertTeam(
  db: Db,
  team: { env_id: string; name: string; description: string | null; id?: string },
): Promise<TeamRow> {
  return db.insertInto('teams').values(team).returningAll().executeTakeFirstOrThrow();
}

export function updateTeam(db: Db, id: string, patch: { name?: string; description?: string | null }) {
  return db
    .updateTable('teams')
    .set({ ...patch, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

/** False when the team was gone already (a concurrent delete). */
export async function deleteTeam(db: Db, id: string): Promise<boolean> {
  const r = await db.deleteFrom('teams').where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export function listTeamMembers(db: Db, teamId: string) {
  return db
    .selectFrom('team_members')
    .innerJoin('users', 'users.id', 'team_members.user_id')
    .select(['users.id', 'users.email', 'team_members.admin'])
    .where('team_members.team_id', '=', teamId)
    .orderBy('team_members.admin', 'desc')
    .orderBy('users.email')
    .execute();
}

export async function addTeamMembers(
  db: Db,
  teamId: string,
  userIds: string[],
  admin: boolean,
): Promise<void> {
  if (!userIds.length) return;
  await db
    .insertInto('team_members')
    .values(userIds.map((user_id) => ({ user_id, team_id: teamId, admin })))
    .onConflict((oc) => oc.columns(['user_id', 'team_id']).doNothing())
    .execute();
}

export async function removeTeamMember(db: Db, teamId: string, userId: string): Promise<boolean> {
  const r = await db
    .deleteFrom('team_members')
    .where('team_id', '=', teamId)
    .where('user_id', '=', userId)
    .executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export function countTeamOwners(db: Db, teamId: string) {
  return db
    .selectFrom('team_members')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('team_id', '=', teamId)
    .where('admin', '=', true)
    .executeTakeFirstOrThrow()
    .then((r) => Number(r.n));
}

export function findExistingUserIds(db: Db, ids: string[]) {
  return db
    .selectFrom('users')
    .select('id')
    .where('id', 'in', ids)
    .execute()
    .then((rows) => new Set(rows.map((r) => r.id)));
}

/**
 * The team with the user's team membership and environment membership
 * (each `admin` flag null when not a member), in one query: the access check
 * of every team route.
 */
export function findTeamWithMembership(db: Db, teamId: string, userId: string) {
  return db
    .selectFrom('teams')
    .leftJoin('team_members as tm', (join) =>
      join.onRef('tm.team_id', '=', 'teams.id').on('tm.user_id', '=', userId),
    )
    .leftJoin('env_members as em', (join) =>
      join.onRef('em.env_id', '=', 'teams.env_id').on('em.user_id', '=', userId),
    )
    .selectAll('teams')
    .select(['tm.admin as team_admin', 'em.admin as env_admin'])
    .where('teams.id', '=', teamId)
    .executeTakeFirst();
}
