import { sql, type Kysely } from 'kysely';

// The embedded secret store (spec 2.14): the Secrets of the worker namespace
// when there is no Kubernetes. `sealed_data` is the whole `data` object as
// JSON, sealed with AES-256-GCM under the service master key (SecretBox);
// names, labels and timestamps stay in the clear (keys are sealed too).
// Frozen in time: no app imports, an untyped database.
/* eslint-disable @typescript-eslint/no-explicit-any */

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('secrets')
    .addColumn('namespace', sql`text collate "C"`, (c) => c.notNull())
    .addColumn('name', sql`text collate "C"`, (c) => c.notNull())
    .addColumn('sealed_data', 'text', (c) => c.notNull())
    .addColumn('labels', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('secrets_pkey', ['namespace', 'name'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('secrets').execute();
}
