import { sql, type Kysely } from 'kysely';

// The grants of the embedded secret store (docs/security.md, "Secret
// references"): a secret's annotations, as a Kubernetes Secret has them.
// `sluice.dev/allowed-teams` and `sluice.dev/allowed-envs` name who may
// reference it; existing secrets start with none, so nobody may until a
// superuser grants them (the migration the upgrade notes describe).
// Frozen in time: no app imports, an untyped database.
/* eslint-disable @typescript-eslint/no-explicit-any */

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .alterTable('secrets')
    .addColumn('annotations', 'jsonb', (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.alterTable('secrets').dropColumn('annotations').execute();
}
