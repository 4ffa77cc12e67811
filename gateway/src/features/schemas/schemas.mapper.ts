import type { SchemaSubjectRead, SchemaVersionRead, SchemaVersionSummary } from '@sluice/shared/schemas';
import type { SchemaRow } from '../../db/schema.js';
import type { SubjectRow } from './schemas.repository.js';
import { toIso } from '../../db/timestamps.js';

export function toSubjectRead(r: SubjectRow): SchemaSubjectRead {
  return {
    subject: r.subject,
    latest_version: r.version,
    latest_id: r.id,
    schema_type: r.schema_type,
    updated_at: toIso(r.created_at),
  };
}

export function toVersionSummary(
  r: Pick<SchemaRow, 'id' | 'version' | 'schema_type' | 'created_at'>,
): SchemaVersionSummary {
  return { id: r.id, version: r.version, schema_type: r.schema_type, created_at: toIso(r.created_at) };
}

export function toVersionRead(r: SchemaRow): SchemaVersionRead {
  return {
    id: r.id,
    subject: r.subject,
    version: r.version,
    schema_type: r.schema_type,
    schema: r.schema,
    created_at: toIso(r.created_at),
  };
}
