import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { PIPELINE_STATES } from '../catalog/resources.js';
import { HumanName, Literals, NameSearch, Nullable, Page, PageQuery, Timestamp, Uuid } from './common.js';
import { ConnectorConfiguration, ConnectorTypeValue } from './connectors.js';
import { sourceRetention } from './datamodels.js';
import { MapperConfig } from './subscriptions.js';

// REST bodies of pipelines (spec 2.6, 4.4): snake_case, as the spec writes them.

export const PipelineStateValue = Literals(PIPELINE_STATES, 'Spec 3.1');

const PipelineName = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: '^[A-Za-z0-9_-]+$',
  description: 'Unique in the team; letters, digits, - and _ only (spec 2.6)',
});
const N = <T extends TSchema>(t: T) => Type.Optional(Nullable(t));

/** The flattened fields (spec 2.6, version 2); null means "not given" on create and "clear" on PATCH. */
const flatFields = {
  existing_source_id: N(Uuid),
  source_name: N(HumanName),
  source_type: N(ConnectorTypeValue),
  source_config: N(ConnectorConfiguration),
  existing_target_id: N(Uuid),
  target_name: N(HumanName),
  target_type: N(ConnectorTypeValue),
  target_config: N(ConnectorConfiguration),
  datamodel_source_topic: N(
    Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'Capture-list entry to deliver (default: the first)',
    }),
  ),
  datamodel_target_topic: N(
    Type.String({ minLength: 1, maxLength: 249, description: 'Change-stream topic of the data model' }),
  ),
  datamodel_error_table_enabled: N(Type.Boolean()),
  datamodel_error_table_name: N(Type.String({ minLength: 1, maxLength: 255 })),
  datamodel_error_table_target_id: N(Uuid),
  subscription_target_table_name: N(Type.String({ minLength: 1, maxLength: 255 })),
  subscription_backfill: N(Type.Boolean()),
  subscription_mapper_config: N(MapperConfig),
  subscription_consumer_id: N(Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9._-]+$' })),
  subscription_error_table_enabled: N(Type.Boolean()),
  subscription_error_table_name: N(Type.String({ minLength: 1, maxLength: 255 })),
  subscription_error_table_target_id: N(Uuid),
};

export const PipelineNestedConfiguration = Type.Object(
  {
    source_name: HumanName,
    source_type: ConnectorTypeValue,
    source_config: ConnectorConfiguration,
    target_name: HumanName,
    target_type: ConnectorTypeValue,
    target_config: ConnectorConfiguration,
    smt_name: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
    smt_config: Type.Optional(Nullable(MapperConfig)),
    draft_step: Type.Optional(Nullable(Type.String({ maxLength: 255 }))),
  },
  {
    $id: 'PipelineNestedConfiguration',
    additionalProperties: false,
    description: 'The nested json_configuration (spec 2.6): new connectors on both sides',
  },
);
export type PipelineNestedConfiguration = Static<typeof PipelineNestedConfiguration>;

/**
 * What POST /pipelines/ checks first: the fields of both shapes (spec 2.6).
 * With `json_configuration` it is the nested shape (then `state` is `draft`
 * and no flattened field is given); otherwise the flattened one.
 */
export const PipelineCreate = Type.Object(
  {
    name: PipelineName,
    team_id: Uuid,
    state: Type.Optional(PipelineStateValue),
    json_configuration: Type.Optional(PipelineNestedConfiguration),
    ...flatFields,
  },
  { $id: 'PipelineCreate', additionalProperties: false },
);
export type PipelineCreate = Static<typeof PipelineCreate>;

export const PipelineUpdate = Type.Object(
  { name: Type.Optional(PipelineName), team_id: Type.Optional(Uuid), ...flatFields },
  {
    $id: 'PipelineUpdate',
    additionalProperties: false,
    description:
      'Any subset of the flattened fields (spec 4.4): `name` alone renames; `existing_source_id` with the ' +
      'source trio set to null switches to an existing connector; the trio changes the pipeline’s own ' +
      'connector (or replaces an existing one with a new one); subscription_* and datamodel_* fields alone ' +
      'change the subscription and data model. Every change adds 1 to `version`.',
  },
);
export type PipelineUpdate = Static<typeof PipelineUpdate>;

const nested = Type.Object(
  {
    source_name: Type.String(),
    source_type: ConnectorTypeValue,
    source_config: ConnectorConfiguration,
    target_name: Type.String(),
    target_type: ConnectorTypeValue,
    target_config: ConnectorConfiguration,
    smt_name: Nullable(Type.String()),
    smt_config: MapperConfig,
    draft_step: Nullable(Type.String()),
  },
  { additionalProperties: false },
);

export const PipelineRead = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    state: PipelineStateValue,
    version: Type.Integer({ minimum: 1 }),
    team_id: Uuid,
    team_name: Type.String(),
    existing_source_id: Nullable(Uuid),
    source_connector_id: Uuid,
    source_name: Type.String(),
    source_type: ConnectorTypeValue,
    source_config: ConnectorConfiguration,
    existing_target_id: Nullable(Uuid),
    target_connector_id: Uuid,
    target_name: Type.String(),
    target_type: ConnectorTypeValue,
    target_config: ConnectorConfiguration,
    datamodel_id: Uuid,
    datamodel_source_topic: Nullable(Type.String()),
    datamodel_target_topic: Nullable(Type.String()),
    datamodel_error_table_enabled: Type.Boolean(),
    datamodel_error_table_name: Nullable(Type.String()),
    datamodel_error_table_target_id: Nullable(Uuid),
    subscription_id: Uuid,
    subscription_target_table_name: Type.String(),
    subscription_backfill: Type.Boolean(),
    subscription_mapper_config: MapperConfig,
    subscription_consumer_id: Type.String(),
    subscription_error_table_enabled: Type.Boolean(),
    subscription_error_table_name: Nullable(Type.String()),
    subscription_error_table_target_id: Nullable(Uuid),
    json_configuration: nested,
    status_message: Nullable(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  {
    $id: 'PipelineRead',
    additionalProperties: false,
    description:
      'Both shapes of spec 2.6 in one body: the flattened fields and the nested json_configuration. ' +
      'existing_*_id is set when the pipeline uses a connector it did not create; *_connector_id always.',
  },
);
export type PipelineRead = Static<typeof PipelineRead>;

export const PipelineListItem = Type.Object(
  {
    id: Uuid,
    source_name: Type.String(),
    source_type: ConnectorTypeValue,
    transform: Type.Integer({ minimum: 0, description: 'Number of mapper rules' }),
    target_name: Type.String(),
    target_type: ConnectorTypeValue,
    name: Type.String(),
    state: PipelineStateValue,
    owner: Type.String({ description: 'Name of the owning team' }),
  },
  { $id: 'PipelineList', additionalProperties: false },
);
export const PipelinePage = Page(PipelineListItem, 'Page_PipelineList');
export const PipelineListQuery = Type.Composite([
  PageQuery,
  Type.Object({
    search: Type.Optional(NameSearch),
    state: Type.Optional(PipelineStateValue),
    team_id: Type.Optional(Uuid),
  }),
]);
export type PipelineListQuery = Static<typeof PipelineListQuery>;

export const PipelineStatusRead = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    state: PipelineStateValue,
    version: Type.Integer({ minimum: 1 }),
    status_message: Nullable(Type.String()),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'PipelineStatusRead', additionalProperties: false },
);
export const PipelineStatusPage = Page(PipelineStatusRead, 'Page_PipelineStatusRead');

export const PipelineCount = Type.Object(
  {
    all: Type.Integer({ minimum: 0 }),
    draft: Type.Integer({ minimum: 0 }),
    building: Type.Integer({ minimum: 0 }),
    live: Type.Integer({ minimum: 0 }),
    paused: Type.Integer({ minimum: 0 }),
    error: Type.Integer({ minimum: 0 }),
  },
  { $id: 'PipelineCount', additionalProperties: false },
);
export type PipelineCount = Static<typeof PipelineCount>;
export const PipelineCountQuery = Type.Object({ team_id: Type.Optional(Uuid) });

export const PipelineConfiguration = Type.Object(
  { name: PipelineName, team_id: Uuid, version: Type.Integer({ minimum: 1 }), ...flatFields },
  {
    $id: 'PipelineConfiguration',
    additionalProperties: false,
    description:
      'The flattened body of a pipeline (secrets `<redacted>`): export it, edit it, import it back as the ' +
      'next version. On import `version` must be the current one (else 409) and `<redacted>` keeps stored secrets.',
  },
);
export type PipelineConfiguration = Static<typeof PipelineConfiguration>;

export const PipelineLatency = Type.Object(
  {
    pipeline_id: Uuid,
    p50_ms: Nullable(Type.Number()),
    p95_ms: Nullable(Type.Number()),
    p99_ms: Nullable(Type.Number()),
    samples: Type.Integer({ minimum: 0 }),
    last_event_at: Nullable(Timestamp),
    messages_in: Type.Integer({
      minimum: 0,
      description: 'Change events the source published for the data model',
    }),
    messages_out: Type.Integer({
      minimum: 0,
      description: 'Messages the target confirmed for the subscription',
    }),
    errors: Type.Integer({ minimum: 0, description: 'Messages the subscription could not deliver' }),
    ...sourceRetention,
    reported_at: Nullable(Timestamp),
  },
  {
    $id: 'PipelineLatency',
    additionalProperties: false,
    description:
      "End-to-end latency the target worker reports (source event time → row written), from its histogram's " +
      'buckets (p50/p95/p99 of the current worker run), with the counters and, for a PostgreSQL source, the WAL ' +
      'its replication slot retains, for a MySQL or MariaDB source its binary log figures; null until then (docs/data-plane.md, "Monitoring")',
  },
);
export type PipelineLatency = Static<typeof PipelineLatency>;
