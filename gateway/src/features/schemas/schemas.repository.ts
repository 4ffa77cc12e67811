import { sql } from 'kysely';
import type { Db } from '../../db/database.js';
import type { SchemaRow } from '../../db/schema.js';

export function findByDefinition(
  db: Db,
  subject: string,
  schemaType: SchemaRow['schema_type'],
  fingerprint: string,
): Promise<Pick<SchemaRow, 'id' | 'version'> | undefined> {
  return db
    .selectFrom('schemas')
    .select(['id', 'version'])
    .where('subject', '=', subject)
    .where('schema_type', '=', schemaType)
    .where('fingerprint', '=', fingerprint)
    .executeTakeFirst();
}

/**
 * Serialises registrations of one subject until the transaction ends: a
 * transaction-scoped advisory lock on a hash of the subject (a collision
 * between two subjects only makes them wait for each other).
 */
export async function lockSubject(db: Db, subject: string): Promise<void> {
  await sql`select pg_advisory_xact_lock(hashtextextended(${`sluice.schemas:${subject}`}, 0))`.execute(db);
}

/** Inserts the next version of the subject (1 for a new one). */
export function insertNextVersion(
  db: Db,
  row: Pick<SchemaRow, 'subject' | 'schema_type' | 'schema' | 'fingerprint'>,
): Promise<Pick<SchemaRow, 'id' | 'version'>> {
  return db
    .insertInto('schemas')
    .values({
      ...row,
      version: sql<number>`(select coalesce(max(version), 0) + 1 from schemas where subject = ${row.subject})`,
    })
    .returning(['id', 'version'])
    .executeTakeFirstOrThrow();
}

export interface SubjectRow {
  subject: string;
  id: string;
  version: number;
  schema_type: SchemaRow['schema_type'];
  created_at: Date;
}

/** Subjects in byte order, each with its latest version. */
export async function listSubjects(
  db: Db,
  opts: { offset: number; limit: number },
): Promise<{ rows: SubjectRow[]; total: number }> {
  const [rows, count] = await Promise.all([
    db
      .selectFrom('schemas')
      .distinctOn('subject')
      .select(['subject', 'id', 'version', 'schema_type', 'created_at'])
      .orderBy('subject')
      .orderBy('version', 'desc')
      .offset(opts.offset)
      .limit(opts.limit)
      .execute(),
    db
      .selectFrom('schemas')
      .select(sql<string>`count(distinct subject)`.as('n'))
      .executeTakeFirstOrThrow(),
  ]);
  return { rows, total: Number(count.n) };
}

export function listVersions(
  db: Db,
  subject: string,
): Promise<Pick<SchemaRow, 'id' | 'version' | 'schema_type' | 'created_at'>[]> {
  return db
    .selectFrom('schemas')
    .select(['id', 'version', 'schema_type', 'created_at'])
    .where('subject', '=', subject)
    .orderBy('version')
    .execute();
}

/** One version, or the latest when `version` is null. */
export function findVersion(db: Db, subject: string, version: number | null): Promise<SchemaRow | undefined> {
  let q = db.selectFrom('schemas').selectAll().where('subject', '=', subject);
  q = version === null ? q.orderBy('version', 'desc').limit(1) : q.where('version', '=', version);
  return q.executeTakeFirst();
}
