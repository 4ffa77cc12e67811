import type { Db } from '../../db/database.js';

export function insertApiKey(
  db: Db,
  row: {
    name: string;
    prefix: string;
    key_hash: string;
    user_id: string;
    created_by: string;
    admin: boolean;
    env_ids: string[];
  },
) {
  return db
    .insertInto('api_keys')
    .values({ ...row, env_ids: JSON.stringify(row.env_ids), last_used_at: null, revoked_at: null })
    .returningAll()
    .executeTakeFirstOrThrow();
}

export function listApiKeys(db: Db) {
  return db.selectFrom('api_keys').selectAll().orderBy('created_at').execute();
}

export type ApiKeyRow = Awaited<ReturnType<typeof listApiKeys>>[number];

export function findApiKey(db: Db, id: string) {
  return db.selectFrom('api_keys').selectAll().where('id', '=', id).executeTakeFirst();
}

export function findApiKeyByHash(db: Db, hash: string) {
  return db.selectFrom('api_keys').selectAll().where('key_hash', '=', hash).executeTakeFirst();
}

export async function touchApiKey(db: Db, id: string): Promise<void> {
  await db.updateTable('api_keys').set({ last_used_at: new Date() }).where('id', '=', id).execute();
}

export async function markApiKeyRevoked(db: Db, id: string): Promise<void> {
  await db.updateTable('api_keys').set({ revoked_at: new Date() }).where('id', '=', id).execute();
}

export function findExistingEnvIds(db: Db, ids: string[]) {
  return db
    .selectFrom('envs')
    .select('id')
    .where('id', 'in', ids)
    .execute()
    .then((rows) => new Set(rows.map((r) => r.id)));
}
