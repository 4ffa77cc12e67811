import { sql, type Kysely } from 'kysely';

// The mirror follows every watched namespace (SLUICE_WATCH_NAMESPACES), with
// one list-and-watch per kind and namespace (a Role-scoped gateway may only
// watch namespace by namespace), so each loop keeps its own cursor:
// mirror_cursors is keyed by (kind, namespace), `*` being the cluster-wide
// loop of a cluster-scope install. The cursors of the release namespace alone
// are dropped rather than guessed at (the migration does not know that
// namespace): the next start relists each kind once, which upserts what is
// there and tombstones what is gone, as at a first start. Frozen in time: no
// app imports.
/* eslint-disable @typescript-eslint/no-explicit-any */

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('mirror_cursors').execute();
  await db.schema
    .createTable('mirror_cursors')
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('namespace', 'text', (c) => c.notNull())
    .addColumn('resource_version', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('mirror_cursors_pkey', ['kind', 'namespace'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('mirror_cursors').execute();
  await db.schema
    .createTable('mirror_cursors')
    .addColumn('kind', 'text', (c) => c.primaryKey())
    .addColumn('resource_version', 'bigint', (c) => c.notNull())
    .addColumn('updated_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}
