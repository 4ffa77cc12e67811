import { Type, type Static } from '@sinclair/typebox';
import { Page, Timestamp, Uuid } from './common.js';

// Spec 2.11 and 4.7: the schema registry. Subjects are global (like a
// Confluent registry), each with numbered versions of an Avro or JSON Schema
// definition.

/** 1–255 characters: letters, digits, `.`, `_`, `-`. */
export const SUBJECT_PATTERN = '^[A-Za-z0-9._-]{1,255}$';
export const SchemaSubject = Type.String({
  pattern: SUBJECT_PATTERN,
  maxLength: 255,
  description: 'Subject name: 1–255 letters, digits, ".", "_" or "-"',
});

export const SchemaType = Type.Union([Type.Literal('AVRO'), Type.Literal('JSON')], {
  description: 'AVRO or JSON (JSON Schema)',
});
export type SchemaType = Static<typeof SchemaType>;

export const SchemaCreate = Type.Object(
  {
    schema: Type.String({
      minLength: 1,
      description: 'The raw definition: an Avro schema or a JSON Schema, as JSON text',
    }),
    schema_type: Type.Optional(
      Type.Union([Type.Literal('AVRO'), Type.Literal('JSON')], {
        description:
          'Omitted: detected. JSON text that is a string, an array (union), or an object whose `type` is ' +
          'record, enum, fixed, array, map or an Avro primitive name (and that has no `$schema`) is Avro; ' +
          'anything else is JSON Schema.',
      }),
    ),
  },
  { $id: 'SchemaCreate', additionalProperties: false },
);
export type SchemaCreate = Static<typeof SchemaCreate>;

export const SchemaRead = Type.Object(
  { id: Uuid, version: Type.Integer({ minimum: 1 }) },
  { $id: 'SchemaRead', additionalProperties: false },
);
export type SchemaRead = Static<typeof SchemaRead>;

export const SchemaVersionSummary = Type.Object(
  {
    id: Uuid,
    version: Type.Integer({ minimum: 1 }),
    schema_type: SchemaType,
    created_at: Timestamp,
  },
  { $id: 'SchemaVersionSummary', additionalProperties: false },
);
export type SchemaVersionSummary = Static<typeof SchemaVersionSummary>;
export const SchemaVersionList = Type.Array(SchemaVersionSummary, { $id: 'SchemaVersionList' });

export const SchemaVersionRead = Type.Object(
  {
    id: Uuid,
    subject: Type.String(),
    version: Type.Integer({ minimum: 1 }),
    schema_type: SchemaType,
    schema: Type.String({ description: 'The definition exactly as first registered' }),
    created_at: Timestamp,
  },
  { $id: 'SchemaVersionRead', additionalProperties: false },
);
export type SchemaVersionRead = Static<typeof SchemaVersionRead>;

export const SchemaSubjectRead = Type.Object(
  {
    subject: Type.String(),
    latest_version: Type.Integer({ minimum: 1 }),
    latest_id: Uuid,
    schema_type: SchemaType,
    updated_at: Type.String({ format: 'date-time', description: 'When the latest version was registered' }),
  },
  { $id: 'SchemaSubjectRead', additionalProperties: false },
);
export type SchemaSubjectRead = Static<typeof SchemaSubjectRead>;
export const SchemaSubjectPage = Page(SchemaSubjectRead, 'Page_SchemaSubjectRead');

/** `latest` or a version number. */
export const SchemaVersionRef = Type.String({
  pattern: '^(latest|[1-9][0-9]{0,8})$',
  description: 'A version number, or `latest`',
});
