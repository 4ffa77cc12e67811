import type { Kysely } from 'kysely';

// When a subscription's `backfill` last went from off to on after its
// creation (docs/data-plane.md "Backfills": its consumer keeps its offsets,
// so the gateway replays it). Written by the mirror, which sees the spec
// before and after each change whether it came through the API or kubectl.
// Frozen in time: no app imports.
/* eslint-disable @typescript-eslint/no-explicit-any */

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('mirror_subscriptions').addColumn('backfill_on_at', 'timestamptz').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('mirror_subscriptions').dropColumn('backfill_on_at').execute();
}
