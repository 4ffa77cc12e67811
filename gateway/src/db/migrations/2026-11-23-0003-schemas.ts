import { sql, type Kysely } from 'kysely';

// The schema registry: numbered versions of Avro / JSON Schema definitions per
// global subject. Frozen in time: no app imports, an untyped database.
/* eslint-disable @typescript-eslint/no-explicit-any */

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('schemas')
    .addColumn('id', 'uuid', (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    // Byte order: subjects list the same way on every server.
    .addColumn('subject', sql`text collate "C"`, (c) => c.notNull())
    .addColumn('version', 'integer', (c) => c.notNull().check(sql`version >= 1`))
    .addColumn('schema_type', 'text', (c) => c.notNull().check(sql`schema_type in ('AVRO', 'JSON')`))
    // The definition as first registered, and the SHA-256 of its canonical form
    // (parsed, object keys sorted, no whitespace) that identifies it.
    .addColumn('schema', 'text', (c) => c.notNull())
    .addColumn('fingerprint', 'text', (c) => c.notNull())
    .addColumn('created_at', 'timestamptz', (c) => c.notNull().defaultTo(sql`now()`))
    .addUniqueConstraint('schemas_subject_version_key', ['subject', 'version'])
    .addUniqueConstraint('schemas_subject_definition_key', ['subject', 'schema_type', 'fingerprint'])
    .execute();
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('schemas').execute();
}
