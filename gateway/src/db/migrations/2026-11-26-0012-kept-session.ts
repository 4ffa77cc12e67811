import type { Kysely } from 'kysely';

// The one token that outlives a password change made by the user themselves:
// the token the change was made with (docs/api.md, "Sessions"). Tokens issued
// before `tokens_valid_after` are refused, except the one whose id this holds.
// Frozen in time: no app imports.
/* eslint-disable @typescript-eslint/no-explicit-any */

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').addColumn('tokens_kept_jti', 'text').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('users').dropColumn('tokens_kept_jti').execute();
}
