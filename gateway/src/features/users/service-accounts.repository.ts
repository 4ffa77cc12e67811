import type { Db } from '../../db/database.js';

export function insertServiceAccountToken(
  db: Db,
  row: {
    id: string;
    name: string;
    owner_id: string;
    user_id: string;
    env_id: string;
    team_id: string | null;
    expires_at: Date;
  },
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
