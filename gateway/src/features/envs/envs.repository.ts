import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import { countAllOf, fetchPage, fullCount } from '../../db/paging.js';
import type { EnvRow } from '../../db/schema.js';

export function findEnvByName(db: Db, name: string): Promise<EnvRow | undefined> {
  return db.selectFrom('envs').selectAll().where('name', '=', name).executeTakeFirst();
}

/** The caller's membership in an environment, if any. */
export function findEnvMembership(db: Db, userId: string, envId: string) {
  return db
    .selectFrom('env_members')
    .select('admin')
    .where('user_id', '=', userId)
    .where('env_id', '=', envId)
    .executeTakeFirst();
}

export async function listEnvs(
  db: Db,
  opts: { memberId: string | null; offset: number; limit: number },
): Promise<{ rows: EnvRow[]; total: number }> {
  let q = db.selectFrom('envs');
  if (opts.memberId) {
    const member = opts.memberId;
    q = q.where('id', 'in', (eb) =>
      eb.selectFrom('env_members').select('env_id').where('user_id', '=', member),
    );
  }
  return fetchPage(
    () => q.selectAll().select(fullCount).orderBy('name').offset(opts.offset).limit(opts.limit).execute(),
    countAllOf(q),
    opts.offset,
  );
}

export function insertEnv(
  db: Db,
  env: Pick<
    EnvRow,
    'name' | 'description' | 'use_retention' | 'retention_configuration' | 'broker_secret'
  > & {
    id?: string;
  },
): Promise<EnvRow> {
  return db
    .insertInto('envs')
    .values({ ...env, retention_configuration: jsonOrNull(env.retention_configuration) })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function updateEnv(db: Db, id: string, patch: Partial<Omit<EnvRow, 'id' | 'created_at'>>) {
  const values = { ...patch, updated_at: new Date() };
  if ('retention_configuration' in patch)
    values.retention_configuration = jsonOrNull(patch.retention_configuration);
  return db.updateTable('envs').set(values).where('id', '=', id).returningAll().executeTakeFirst();
}

/** False when the environment was gone already (a concurrent delete). */
export async function deleteEnv(db: Db, id: string): Promise<boolean> {
  const r = await db.deleteFrom('envs').where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export async function addEnvMember(db: Db, userId: string, envId: string, admin: boolean): Promise<void> {
  await db
    .insertInto('env_members')
    .values({ user_id: userId, env_id: envId, admin })
    .onConflict((oc) =>
      // Joining a team never demotes an environment admin.
      oc
        .columns(['user_id', 'env_id'])
        .doUpdateSet({ admin: sql<boolean>`env_members.admin or excluded.admin` }),
    )
    .execute();
}

/** jsonb parameters go as JSON text: both pg and PGlite then store an object. */
function jsonOrNull(v: unknown): string | null {
  return v === null || v === undefined ? null : JSON.stringify(v);
}

/** A user's first environment becomes their active one. */
export async function setActiveEnvIfUnset(db: Db, userIds: string[], envId: string): Promise<void> {
  if (!userIds.length) return;
  await db
    .updateTable('users')
    .set({ active_env_id: envId, updated_at: new Date() })
    .where('id', 'in', userIds)
    .where('active_env_id', 'is', null)
    .execute();
}

/** The environment and the user's membership (`member_admin` null when not a member), in one query. */
export function findEnvWithMembership(db: Db, envId: string, userId: string) {
  return db
    .selectFrom('envs')
    .leftJoin('env_members as em', (join) =>
      join.onRef('em.env_id', '=', 'envs.id').on('em.user_id', '=', userId),
    )
    .selectAll('envs')
    .select('em.admin as member_admin')
    .where('envs.id', '=', envId)
    .executeTakeFirst();
}
