import type {
  SchemaCreate,
  SchemaRead,
  SchemaSubjectRead,
  SchemaVersionRead,
  SchemaVersionSummary,
} from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { invalid, notFound } from '../../http/errors.js';
import { offsetOf, pageOf } from '../../http/pagination.js';
import { DefinitionError, parseDefinition } from './schemas.definition.js';
import { toSubjectRead, toVersionRead, toVersionSummary } from './schemas.mapper.js';
import * as repo from './schemas.repository.js';
import { isUniqueViolation } from '../../db/errors.js';

const subjectNotFound = () => notFound('Subject not found');

/**
 * Registers a definition under a subject. The same definition (same type,
 * same canonical form) returns its existing version (`created: false`); a new
 * one becomes the subject's next version. Registrations of one subject are
 * serialised by a lock, so concurrent calls never share or skip a number; the
 * unique constraints remain the last word, and a violation is retried.
 */
export async function registerSchema(
  ctx: GatewayContext,
  subject: string,
  body: SchemaCreate,
): Promise<{ created: boolean; schema: SchemaRead }> {
  let def;
  try {
    def = parseDefinition(body.schema, body.schema_type);
  } catch (err) {
    if (err instanceof DefinitionError) throw invalid(['body', 'schema'], err.message);
    throw err;
  }
  const { schemaType, fingerprint } = def;
  for (let attempt = 1; ; attempt++) {
    try {
      return await ctx.db.transaction().execute(async (trx) => {
        await repo.lockSubject(trx, subject);
        const existing = await repo.findByDefinition(trx, subject, schemaType, fingerprint);
        if (existing) return { created: false, schema: { id: existing.id, version: existing.version } };
        const row = await repo.insertNextVersion(trx, {
          subject,
          schema_type: schemaType,
          schema: body.schema,
          fingerprint,
        });
        return { created: true, schema: { id: row.id, version: row.version } };
      });
    } catch (err) {
      if (!isUniqueViolation(err) || attempt >= 5) throw err;
    }
  }
}

export async function listSubjects(
  ctx: GatewayContext,
  q: { page: number; size: number },
): Promise<{ items: SchemaSubjectRead[]; total: number; page: number; size: number; pages: number }> {
  const { rows, total } = await repo.listSubjects(ctx.db, {
    offset: offsetOf(q.page, q.size),
    limit: q.size,
  });
  return pageOf(rows.map(toSubjectRead), total, q.page, q.size);
}

export async function listVersions(ctx: GatewayContext, subject: string): Promise<SchemaVersionSummary[]> {
  const rows = await repo.listVersions(ctx.db, subject);
  if (!rows.length) throw subjectNotFound();
  return rows.map(toVersionSummary);
}

export async function getVersion(
  ctx: GatewayContext,
  subject: string,
  version: string,
): Promise<SchemaVersionRead> {
  const row = await repo.findVersion(ctx.db, subject, version === 'latest' ? null : Number(version));
  if (row) return toVersionRead(row);
  // Tell an unknown subject from an unknown version of a known one.
  if (version !== 'latest' && (await repo.findVersion(ctx.db, subject, null))) {
    throw notFound('Version not found');
  }
  throw subjectNotFound();
}
