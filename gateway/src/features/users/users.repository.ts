import { sql, type Insertable } from 'kysely';
import type { Db } from '../../db/database.js';
import { countAllOf, fetchPage, fullCount } from '../../db/paging.js';
import type { NewUser, ServiceAccountTokensTable, UserPatch, UserRow } from '../../db/schema.js';

export function findUserById(db: Db, id: string): Promise<UserRow | undefined> {
  return db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findUserByEmail(db: Db, email: string): Promise<UserRow | undefined> {
  return db
    .selectFrom('users')
    .selectAll()
    .where(sql`lower(email)`, '=', email.toLowerCase())
    .executeTakeFirst();
}

export function insertUser(db: Db, user: NewUser): Promise<UserRow> {
  return db
    .insertInto('users')
    .values({ ...user, email: user.email.toLowerCase() })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function updateUser(db: Db, id: string, patch: UserPatch): Promise<UserRow | undefined> {
  return db
    .updateTable('users')
    .set({ ...patch, updated_at: new Date() })
    .where('id', '=', id)
    .returningAll()
    .executeTakeFirst();
}

export async function deleteUser(db: Db, id: string): Promise<boolean> {
  const r = await db.deleteFrom('users').where('id', '=', id).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/**
 * Users visible to a caller: all for a superuser; otherwise the caller and
 * the people who share an environment with them. `email` narrows that set
 * to one exact address; it never reaches beyond it (docs/api.md,
 * "Permissions").
 */
export async function listUsers(
  db: Db,
  opts: { viewerId: string | null; email?: string; offset: number; limit: number },
): Promise<{ rows: UserRow[]; total: number }> {
  let q = db.selectFrom('users').where('is_service_account', '=', false);
  if (opts.email) q = q.where(sql`lower(email)`, '=', opts.email.toLowerCase());
  if (opts.viewerId) {
    const viewer = opts.viewerId;
    q = q.where((eb) =>
      eb.or([
        eb('users.id', '=', viewer),
        eb(
          'users.id',
          'in',
          eb
            .selectFrom('env_members as mine')
            .innerJoin('env_members as theirs', 'theirs.env_id', 'mine.env_id')
            .select('theirs.user_id')
            .where('mine.user_id', '=', viewer),
        ),
      ]),
    );
  }
  return fetchPage(
    () =>
      q.selectAll('users').select(fullCount).orderBy('email').offset(opts.offset).limit(opts.limit).execute(),
    countAllOf(q),
    opts.offset,
  );
}

export function countActiveSuperusers(db: Db) {
  return db
    .selectFrom('users')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('is_superuser', '=', true)
    .where('is_active', '=', true)
    .executeTakeFirstOrThrow()
    .then((r) => Number(r.n));
}

// Service accounts: a user row with is_service_account and its tokens.
export function insertServiceAccountToken(
  db: Db,
  row: Omit<Insertable<ServiceAccountTokensTable>, 'created_at' | 'revoked_at'>,
) {
  return db
    .insertInto('service_account_tokens')
    .values({ ...row, revoked_at: null })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function listServiceAccountTokens(db: Db, ownerId: string) {
  return db
    .selectFrom('service_account_tokens')
    .selectAll()
    .where('owner_id', '=', ownerId)
    .orderBy('created_at')
    .execute();
}

export type ServiceAccountTokenRow = Awaited<ReturnType<typeof listServiceAccountTokens>>[number];

export function findServiceAccountToken(db: Db, id: string) {
  return db.selectFrom('service_account_tokens').selectAll().where('id', '=', id).executeTakeFirst();
}

export async function markServiceAccountTokenRevoked(db: Db, id: string): Promise<void> {
  await db
    .updateTable('service_account_tokens')
    .set({ revoked_at: new Date() })
    .where('id', '=', id)
    .execute();
}
