import type { Kysely } from 'kysely';

// Whether, when a subscription's `backfill` was last turned on, its consumer
// group had committed offsets on the change stream (docs/data-plane.md
// "Backfills"). Null until the backfill runner's tick has looked; the mirror
// sets it back to null at each switch. A group without offsets reads from the
// earliest offset once `backfill` is on, so it is decided as a new
// subscription; one with offsets is past the beginning, so it is replayed.
// Frozen in time: no app imports.
/* eslint-disable @typescript-eslint/no-explicit-any */

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('mirror_subscriptions').addColumn('backfill_on_consumed', 'boolean').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('mirror_subscriptions').dropColumn('backfill_on_consumed').execute();
}
