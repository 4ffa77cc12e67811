import { Type, type Static } from '@sinclair/typebox';
import { Literals, Nullable, Timestamp, Uuid } from './common.js';

// REST bodies of backfills (spec 4.7; the bodies and the trigger's path are
// ours, docs/api.md "Backfills"). A run replays what a source holds into the
// chosen targets through their subscriptions, beside live delivery.

/** `stream`: the retained change stream is read again; `snapshot`: the source table is read again. */
export const BACKFILL_MODES = ['stream', 'snapshot'] as const;
export type BackfillMode = (typeof BACKFILL_MODES)[number];

export const BACKFILL_STATES = ['pending', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type BackfillState = (typeof BACKFILL_STATES)[number];
/** States in which a run still holds its sources (a second run of one of them is a 409). */
export const ACTIVE_BACKFILL_STATES: readonly BackfillState[] = ['pending', 'running'];

const ids = (description: string, minItems = 0) =>
  Type.Array(Uuid, { minItems, maxItems: 100, uniqueItems: true, description });

export const BackfillRequest = Type.Object(
  {
    source_connector_ids: ids('Source connectors whose data is replayed (at least one)', 1),
    datamodel_ids: ids(
      'Data models of those sources to replay; empty means every enabled data model of the sources',
    ),
    target_connector_ids: ids(
      'Target connectors to replay into, through their subscriptions to those data models; ' +
        'empty means every target subscribed to them',
    ),
  },
  {
    $id: 'BackfillRequest',
    additionalProperties: false,
    description:
      'What to replay: every (data model, target) pair joined by an enabled subscription. Each id must ' +
      'exist and belong to a team of the caller; each data model must belong to one of the sources and ' +
      'each target must subscribe to one of the data models (else 422, located).',
  },
);
export type BackfillRequest = Static<typeof BackfillRequest>;

const ItemPlan = {
  source_connector_id: Uuid,
  datamodel_id: Uuid,
  datamodel_name: Type.String(),
  target_connector_id: Uuid,
  subscription_id: Uuid,
  target_table_name: Type.String(),
  mode: Literals(
    BACKFILL_MODES,
    '`stream` (KAFKA_SOURCE: its topic is read again from the earliest retained offset) or ' +
      '`snapshot` (database sources: the table is read again, rows arrive as snapshot reads, op `r`)',
  ),
  estimated_messages: Type.Integer({
    minimum: 0,
    description:
      'stream: the sum over partitions of end − earliest offset; snapshot: the server’s row estimate ' +
      '(PostgreSQL: pg_class.reltuples, or count(*) for a table never analysed; MySQL and MariaDB: ' +
      'information_schema.tables.table_rows, or count(*) when it is 0)',
  }),
};

export const BackfillPreviewItem = Type.Object(ItemPlan, { $id: 'BackfillPreviewItem' });
export type BackfillPreviewItem = Static<typeof BackfillPreviewItem>;

export const BackfillPreview = Type.Object(
  {
    items: Type.Array(BackfillPreviewItem),
    estimated_messages: Type.Integer({ minimum: 0, description: 'The sum over the items' }),
  },
  { $id: 'BackfillPreview' },
);
export type BackfillPreview = Static<typeof BackfillPreview>;

export const BackfillItemRead = Type.Object(
  {
    ...ItemPlan,
    state: Literals(BACKFILL_STATES),
    messages_replayed: Type.Integer({
      minimum: 0,
      description: 'Messages (stream) or rows (snapshot) written through the mapper to the target so far',
    }),
    error: Nullable(Type.String({ description: 'Why the item failed, in one sentence' })),
  },
  { $id: 'BackfillItemRead' },
);
export type BackfillItemRead = Static<typeof BackfillItemRead>;

export const BackfillRunRead = Type.Object(
  {
    id: Uuid,
    team_id: Uuid,
    state: Literals(
      BACKFILL_STATES,
      'pending (waiting for a gateway to pick it up), running, succeeded, failed, cancelled',
    ),
    cancel_requested: Type.Boolean({
      description: 'A cancel was asked; a running run stops between two batches and ends `cancelled`',
    }),
    source_connector_ids: Type.Array(Uuid),
    datamodel_ids: Type.Array(Uuid),
    target_connector_ids: Type.Array(Uuid),
    estimated_messages: Type.Integer({ minimum: 0 }),
    messages_replayed: Type.Integer({ minimum: 0 }),
    error: Nullable(
      Type.String({ description: 'Why the run failed, in one sentence (never a stack trace)' }),
    ),
    created_by: Type.Union([Uuid, Type.Null()], {
      description: 'Who triggered it; null for an automatic re-snapshot of a new subscription with backfill',
    }),
    created_at: Timestamp,
    started_at: Nullable(Timestamp),
    finished_at: Nullable(Timestamp),
    items: Type.Array(BackfillItemRead),
  },
  { $id: 'BackfillRunRead' },
);
export type BackfillRunRead = Static<typeof BackfillRunRead>;

export const BackfillStatusQuery = Type.Object(
  { source_connector_id: Uuid },
  { additionalProperties: false },
);
export const BackfillRunParams = Type.Object({ run_id: Uuid });
