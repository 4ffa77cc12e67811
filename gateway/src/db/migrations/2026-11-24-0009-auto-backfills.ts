import { sql, type Kysely } from 'kysely';

// Automatic re-snapshots (docs/data-plane.md "Backfills"): what the gateway
// decided, once, for each new subscription with `backfill` — whether its
// stream still began with the source's snapshot, or a snapshot run was
// started (`run_id`). A subscription without a row is still to be decided.
// The subscriptions with `backfill` that exist when this migration runs were
// created before the feature: they are recorded as decided, so upgrading
// never re-snapshots what is already consuming. Frozen in time: no app imports.
/* eslint-disable @typescript-eslint/no-explicit-any */

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('auto_backfills')
    .addColumn('subscription_id', 'uuid', (c) => c.primaryKey())
    .addColumn('decision', 'text', (c) => c.notNull())
    .addColumn('reason', 'text', (c) => c.notNull())
    .addColumn('run_id', 'uuid', (c) => c.references('backfill_runs.id').onDelete('set null'))
    .addColumn('decided_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await sql`
    insert into auto_backfills (subscription_id, decision, reason)
    select id, 'skipped', 'created before automatic re-snapshots'
    from mirror_subscriptions
    where deleted = false and (spec->>'backfill')::boolean is true
    on conflict do nothing`.execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('auto_backfills').execute();
}
