import { sql, type Kysely } from 'kysely';

// Warehouse tasks (docs/warehouses.md): named SQL statements run on a
// cron schedule, and their runs. They live here rather than in the custom
// resource: the scheduler claims due tasks with row locks
// (`FOR UPDATE SKIP LOCKED`), and the unique (task, slot) pair of a run is
// what makes a slot run once whatever the number of gateway replicas.
// Frozen in time: no app imports.
/* eslint-disable @typescript-eslint/no-explicit-any */

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('warehouse_tasks')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('warehouse_id', 'uuid', (c) => c.notNull())
    .addColumn('name', 'text', (c) => c.notNull())
    .addColumn('statement', 'text', (c) => c.notNull())
    .addColumn('schedule', 'text', (c) => c.notNull())
    .addColumn('timezone', 'text', (c) => c.notNull())
    .addColumn('paused', 'boolean', (c) => c.notNull().defaultTo(false))
    // The next slot to run; null while paused.
    .addColumn('next_run_at', 'timestamptz')
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('warehouse_tasks_name_key', ['warehouse_id', 'name'])
    .execute();
  await db.schema
    .createIndex('warehouse_tasks_due_idx')
    .on('warehouse_tasks')
    .column('next_run_at')
    .where(sql.ref('next_run_at'), 'is not', null)
    .execute();

  await db.schema
    .createTable('warehouse_task_runs')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn('task_id', 'uuid', (c) => c.notNull().references('warehouse_tasks.id').onDelete('cascade'))
    .addColumn('trigger', 'text', (c) => c.notNull())
    // The slot of a scheduled run (null for a manual one): one run per slot.
    .addColumn('scheduled_for', 'timestamptz')
    .addColumn('started_at', 'timestamptz', (c) => c.notNull())
    .addColumn('finished_at', 'timestamptz')
    .addColumn('state', 'text', (c) => c.notNull())
    .addColumn('statement_id', 'text')
    .addColumn('error', 'text')
    // The scheduler that claimed it (diagnostics: which replica ran what).
    .addColumn('runner', 'text', (c) => c.notNull())
    .addUniqueConstraint('warehouse_task_runs_slot_key', ['task_id', 'scheduled_for'])
    .execute();
  await db.schema
    .createIndex('warehouse_task_runs_task_idx')
    .on('warehouse_task_runs')
    .columns(['task_id', 'started_at'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('warehouse_task_runs').execute();
  await db.schema.dropTable('warehouse_tasks').execute();
}
