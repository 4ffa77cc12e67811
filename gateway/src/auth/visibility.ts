import { sql, type Expression, type SqlBool } from 'kysely';
import type { Principal } from './principal.js';

/**
 * The rows of the catalog a caller may read, as a SQL condition on a team id
 * column (`column` is a qualified reference such as `c.team_id`): the teams
 * they belong to and every team of the environments they administer;
 * superusers read the objects of every existing team. The same rule as
 * `requireTeam(…, 'member')`, for lists (docs/api.md, "Permissions"). An
 * object whose team is gone (deleted, its objects being removed in the
 * background: docs/api.md "Deletions") is nobody's to read.
 */
export function visibleTo(p: Principal, column: string): Expression<SqlBool> {
  if (p.user.is_superuser)
    return sql<SqlBool>`exists (select 1 from teams t where t.id = ${sql.ref(column)})`;
  const uid = p.user.id;
  return sql<SqlBool>`${sql.ref(column)} in (
    select tm.team_id from team_members tm where tm.user_id = ${uid}
    union
    select t.id from teams t join env_members em on em.env_id = t.env_id
    where em.user_id = ${uid} and em.admin)`;
}
