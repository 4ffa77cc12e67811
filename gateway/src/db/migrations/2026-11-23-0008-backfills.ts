import { sql, type Kysely } from 'kysely';

// Backfills (spec 4.7, docs/data-plane.md "Backfills"): a run, its items (one
// per subscription replayed) with their progress, and the sources a run
// holds while active. The gateway owns them (not the cluster): progress is
// written after every batch, and a run is claimed by one gateway replica at a
// time through its lease. Frozen in time: no app imports.
/* eslint-disable @typescript-eslint/no-explicit-any */

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('backfill_runs')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('team_id', 'uuid', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('cancel_requested', 'boolean', (c) => c.notNull().defaultTo(false))
    .addColumn('source_connector_ids', 'jsonb', (c) => c.notNull())
    .addColumn('datamodel_ids', 'jsonb', (c) => c.notNull())
    .addColumn('target_connector_ids', 'jsonb', (c) => c.notNull())
    .addColumn('error', 'text')
    .addColumn('created_by', 'uuid')
    // The replica running it and until when its claim holds (renewed every batch).
    .addColumn('runner', 'text')
    .addColumn('lease_until', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('started_at', 'timestamptz')
    .addColumn('finished_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('backfill_runs_state_idx').on('backfill_runs').column('state').execute();

  await db.schema
    .createTable('backfill_items')
    .addColumn('run_id', 'uuid', (c) => c.notNull().references('backfill_runs.id').onDelete('cascade'))
    .addColumn('position', 'integer', (c) => c.notNull())
    .addColumn('source_connector_id', 'uuid', (c) => c.notNull())
    .addColumn('datamodel_id', 'uuid', (c) => c.notNull())
    .addColumn('datamodel_name', 'text', (c) => c.notNull())
    .addColumn('target_connector_id', 'uuid', (c) => c.notNull())
    .addColumn('subscription_id', 'uuid', (c) => c.notNull())
    .addColumn('target_table_name', 'text', (c) => c.notNull())
    .addColumn('mode', 'text', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('estimated_messages', 'bigint', (c) => c.notNull())
    .addColumn('messages_replayed', 'bigint', (c) => c.notNull().defaultTo(0))
    // Where the replay stands: per partition the next and end offsets (stream),
    // or the key of the last row written (snapshot). A resumed run starts there.
    .addColumn('progress', 'jsonb', (c) => c.notNull())
    .addColumn('error', 'text')
    .addPrimaryKeyConstraint('backfill_items_pkey', ['run_id', 'position'])
    .execute();
  await db.schema
    .createIndex('backfill_items_source_idx')
    .on('backfill_items')
    .column('source_connector_id')
    .execute();

  // One active run per source connector: the primary key turns a second trigger into a 409.
  await db.schema
    .createTable('backfill_active_sources')
    .addColumn('source_connector_id', 'uuid', (c) => c.primaryKey())
    .addColumn('run_id', 'uuid', (c) => c.notNull().references('backfill_runs.id').onDelete('cascade'))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('backfill_active_sources').execute();
  await db.schema.dropTable('backfill_items').execute();
  await db.schema.dropTable('backfill_runs').execute();
}
