import { sql, type Kysely } from 'kysely';

// Deletions of teams and environments (docs/api.md "Deletions"): the team or
// environment row goes at once, in the request's transaction, with this row
// naming the teams whose objects are still to be removed. A gateway replica
// claims it through its lease and removes the objects step by step,
// recording its progress, so a restart resumes where it stood. No foreign
// keys: what it names is gone, or about to be. Frozen in time: no app imports.
/* eslint-disable @typescript-eslint/no-explicit-any */

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('deletions')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('target_id', 'uuid', (c) => c.notNull())
    .addColumn('target_name', 'text', (c) => c.notNull())
    .addColumn('env_id', 'uuid', (c) => c.notNull())
    .addColumn('team_ids', 'jsonb', (c) => c.notNull())
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('step', 'text')
    .addColumn('progress', 'jsonb', (c) => c.notNull())
    .addColumn('message', 'text')
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('requested_by', 'uuid')
    // The replica running it and until when its claim holds (renewed while it works).
    .addColumn('runner', 'text')
    .addColumn('lease_until', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('started_at', 'timestamptz')
    .addColumn('finished_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('deletions_state_idx').on('deletions').column('state').execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('deletions').execute();
}
