import { Type, type Static } from '@sinclair/typebox';
import { Literals, Nullable, Uuid } from './common.js';

// REST bodies of the preview of a subscription or pipeline (the
// spec is silent, docs/api.md "Preview" and docs/data-plane.md "Preview"
// give the decisions): a few live messages mapped exactly as the target
// worker maps them, and the DDL a database target would run. Nothing is written.

export const PREVIEW_DEFAULT_LIMIT = 5;
export const PREVIEW_MAX_MESSAGES = 50;

export const PreviewRequest = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: PREVIEW_MAX_MESSAGES,
        default: PREVIEW_DEFAULT_LIMIT,
        description: `How many of the newest messages to fetch (default ${PREVIEW_DEFAULT_LIMIT})`,
      }),
    ),
    messages: Type.Optional(
      Type.Array(Type.Unknown(), {
        minItems: 1,
        maxItems: PREVIEW_MAX_MESSAGES,
        description:
          'Sample messages to map instead of fetching any (nothing is read from the source). For a Kafka ' +
          'source each item is a message value as it would be on the topic; for a database source each ' +
          'item is a row of the source table, wrapped in a snapshot change event (op `r`) as the worker ' +
          'would receive it',
      }),
    ),
  },
  {
    $id: 'PreviewRequest',
    additionalProperties: false,
    description: 'Optional: an empty body fetches the newest 5 messages of the source',
  },
);
export type PreviewRequest = Static<typeof PreviewRequest>;

export const PREVIEW_SOURCE_KINDS = ['stream', 'table', 'request'] as const;
export type PreviewSourceKind = (typeof PREVIEW_SOURCE_KINDS)[number];

const PreviewSource = Type.Object(
  {
    kind: Literals(
      PREVIEW_SOURCE_KINDS,
      '`stream`: the newest messages of the change stream; `table`: rows sampled from the source table ' +
        '(a database source whose stream is still empty); `request`: the `messages` of the request',
    ),
    topic: Type.String({ description: 'The change-stream topic the target worker reads' }),
    table: Nullable(
      Type.String({
        description:
          'The source table sampled (`schema.table`; `database.table` on MySQL and MariaDB), for `table`',
      }),
    ),
    fetched: Type.Integer({ description: 'Messages (or rows) mapped' }),
  },
  { additionalProperties: false },
);

const PreviewRow = Type.Object(
  {
    message_index: Type.Integer({ description: 'Which fetched message (0 = oldest) produced the row' }),
    table: Type.String({ description: "The subscription's target_table_name" }),
    op: Literals(['upsert', 'delete'] as const),
    row: Type.Record(Type.String(), Type.Unknown(), { description: 'The row the target would receive' }),
    key_columns: Type.Array(Type.String(), { description: 'Upserts and deletes go by these columns' }),
  },
  { additionalProperties: false },
);

const PreviewError = Type.Object(
  {
    message_index: Type.Integer(),
    partition: Nullable(
      Type.Integer({ description: 'Kafka coordinates; null for sampled or given messages' }),
    ),
    offset: Nullable(Type.String()),
    kind: Literals(
      ['empty', 'not_json', 'not_change_event', 'mapper'] as const,
      'empty or not-JSON message, a platform message that is not a change event, or a row with an `error` key',
    ),
    reason: Type.String(),
    row_index: Type.Integer({
      description: 'Which row of the mapper output failed (0 when the message did)',
    }),
    row: Nullable(
      Type.Record(Type.String(), Type.Unknown(), { description: 'The failed row, with its `error` key' }),
    ),
    message: Nullable(Type.String({ description: 'The message as text (cut at 4096 characters)' })),
    error_table: Nullable(
      Type.String({ description: 'Where the worker writes this failure; null: only logged and counted' }),
    ),
  },
  { additionalProperties: false },
);

const TypeConflict = Type.Object(
  {
    column: Type.String(),
    table_type: Type.String({ description: 'The type of the column in the existing table' }),
    mapper_type: Type.String({
      description: "The type Sluice would give it (the mapper's cast or the values)",
    }),
  },
  { additionalProperties: false },
);

const PreviewTableDdl = Type.Object(
  {
    table: Type.String(),
    exists: Type.Boolean(),
    statements: Type.Array(Type.String(), {
      description: 'CREATE TABLE when missing, one ALTER TABLE … ADD COLUMN for missing columns, else none',
    }),
    type_conflicts: Type.Array(TypeConflict, {
      description: 'Existing columns whose type may refuse the values (Sluice never retypes a column)',
    }),
    problems: Type.Array(Type.String(), {
      description: 'What would make the worker refuse the table (e.g. no unique index on the key columns)',
    }),
  },
  { additionalProperties: false },
);

const PreviewDdl = Type.Object(
  {
    schema: Type.String({ description: 'The target schema (`schema` of the connector, default public)' }),
    statements: Type.Array(Type.String(), {
      description: 'Every statement, in the order the worker runs them',
    }),
    tables: Type.Array(PreviewTableDdl, {
      description: 'Per table the rows go to: the target table, and the error table when enabled and used',
    }),
  },
  { additionalProperties: false },
);

export const PreviewResult = Type.Object(
  {
    subscription_id: Uuid,
    source: PreviewSource,
    rows: Type.Array(PreviewRow),
    errors: Type.Array(PreviewError),
    ddl: Nullable(PreviewDdl),
    warnings: Type.Array(Type.String()),
  },
  {
    $id: 'PreviewResult',
    additionalProperties: false,
    description:
      'What the target worker would do with these messages. `ddl` is null for targets that are not databases.',
  },
);
export type PreviewResult = Static<typeof PreviewResult>;
