import { sql } from 'kysely';
import type { Db } from '../db/database.js';

export function findPrincipalUser(db: Db, userId: string, jti: string) {
  return db
    .selectFrom('users')
    .selectAll('users')
    .select(sql<boolean>`exists (select 1 from revoked_tokens r where r.jti = ${jti})`.as('revoked'))
    .where('users.id', '=', userId)
    .executeTakeFirst();
}

export async function revokeToken(db: Db, jti: string, expiresAt: Date): Promise<void> {
  await db
    .insertInto('revoked_tokens')
    .values({ jti, expires_at: expiresAt })
    .onConflict((oc) => oc.column('jti').doNothing())
    .execute();
}

/** Revocations only matter until the token would have expired anyway. */
export async function purgeExpired(db: Db): Promise<void> {
  await db.deleteFrom('revoked_tokens').where('expires_at', '<', new Date()).execute();
  await db.deleteFrom('action_tokens').where('expires_at', '<', new Date()).execute();
  await db
    .deleteFrom('idempotency_keys')
    .where('created_at', '<', new Date(Date.now() - 24 * 3600 * 1000))
    .execute();
}

export async function insertActionToken(
  db: Db,
  row: { token_hash: string; user_id: string; purpose: 'reset' | 'verify'; expires_at: Date },
): Promise<void> {
  await db.insertInto('action_tokens').values(row).execute();
}

/** Reads a token without using it up (to check the request before consuming it). */
export function findActionToken(db: Db, tokenHash: string, purpose: 'reset' | 'verify') {
  return db
    .selectFrom('action_tokens')
    .select(['user_id', 'expires_at'])
    .where('token_hash', '=', tokenHash)
    .where('purpose', '=', purpose)
    .executeTakeFirst();
}

/** Consumes a single-use token: it is deleted by the same statement that reads it. */
export function consumeActionToken(db: Db, tokenHash: string, purpose: 'reset' | 'verify') {
  return db
    .deleteFrom('action_tokens')
    .where('token_hash', '=', tokenHash)
    .where('purpose', '=', purpose)
    .returning(['user_id', 'expires_at'])
    .executeTakeFirst();
}

export async function deleteActionTokens(db: Db, userId: string, purpose: 'reset' | 'verify'): Promise<void> {
  await db.deleteFrom('action_tokens').where('user_id', '=', userId).where('purpose', '=', purpose).execute();
}
