import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { CONNECTOR_TYPE_IDS } from '../connectors/registry.js';
import { CONNECTOR_STATES, PIPELINE_STATES } from '../catalog/resources.js';
import { Page, PageQuery, Timestamp, Uuid } from './common.js';

// REST bodies of the catalog (spec 2.6–2.9, 4.4–4.6): snake_case, as the spec
// writes them. The custom resources behind them are in catalog/resources.ts.

export const Nullable = <T extends TSchema>(t: T) => Type.Union([t, Type.Null()]);
export const Literals = <T extends string>(values: readonly T[], description?: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    description ? { description } : {},
  );

export const ConnectorTypeValue = Literals(CONNECTOR_TYPE_IDS, 'Connector type (spec 2.13)');
export const ConnectorStateValue = Literals(CONNECTOR_STATES, 'Spec 3.2');
export const PipelineStateValue = Literals(PIPELINE_STATES, 'Spec 3.1');
/** A name users see: 1–255 characters, not only blanks. */
export const HumanName = Type.String({ minLength: 1, maxLength: 255, pattern: '\\S' });
const Configuration = Type.Record(Type.String(), Type.Unknown(), {
  description:
    'The json_configuration of the type (GET /connector-types/): secret fields take a value or ' +
    '`{valueFrom: {secretKeyRef: {name, key}}}` and read back as `<redacted>`',
});

// --- Connectors --------------------------------------------------------------

export const ConnectorCreate = Type.Object(
  { name: HumanName, connector_type: ConnectorTypeValue, json_configuration: Configuration, team_id: Uuid },
  { $id: 'ConnectorCreate', additionalProperties: false },
);
export type ConnectorCreate = Static<typeof ConnectorCreate>;

export const ConnectorUpdate = Type.Object(
  {
    name: Type.Optional(HumanName),
    json_configuration: Type.Optional(Configuration),
    team_id: Type.Optional(Uuid),
    connector_type: Type.Optional(ConnectorTypeValue),
  },
  {
    $id: 'ConnectorUpdate',
    additionalProperties: false,
    description:
      'Spec 4.5 rules: json_configuration is replaced whole; the capture list never shrinks (omitted ' +
      'entries are kept, new ones create data models); connector_type cannot change; a CDC source ' +
      'needs at least one table.',
  },
);
export type ConnectorUpdate = Static<typeof ConnectorUpdate>;

/** How the connector's worker fared: `status.worker` of the resource, in the API's snake_case. */
export const ConnectorWorkerRead = Type.Object(
  {
    restarts: Type.Integer({
      minimum: 0,
      description:
        'Times the worker was restarted after it ended (a crash, kill -9), since it was last started',
    }),
    consecutive_failures: Type.Integer({
      minimum: 0,
      description:
        'Restarts since the worker was last ready; at 3 the connector is `error` (the worker is still retried)',
    }),
    last_termination: Nullable(
      Type.Object(
        {
          reason: Type.String({
            description:
              'Error (exited non-zero or killed by a signal), Completed (exited 0), OOMKilled or StartError',
          }),
          exit_code: Nullable(
            Type.Integer({ description: '128 + the signal number when a signal killed it' }),
          ),
          signal: Nullable(Type.String({ description: 'e.g. SIGKILL' })),
          message: Nullable(
            Type.String({ description: 'The error line the worker wrote before it ended, if it wrote one' }),
          ),
          finished_at: Timestamp,
        },
        { additionalProperties: false },
      ),
    ),
  },
  {
    additionalProperties: false,
    description:
      'The worker is restarted when it ends, with back-off (at once, then 10 s, 20 s, 40 s … up to 5 min), ' +
      'under both runtimes; the connector shows `building` meanwhile and `error` after 3 restarts in a row ' +
      'without becoming ready.',
  },
);
export type ConnectorWorkerRead = Static<typeof ConnectorWorkerRead>;

export const ConnectorRead = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    connector_type: ConnectorTypeValue,
    direction: Literals(['source', 'target', 'job'] as const),
    topics_config_key: Nullable(Literals(['whitelist', 'topic'] as const)),
    json_configuration: Configuration,
    team_id: Uuid,
    team_name: Type.String(),
    status: ConnectorStateValue,
    desired_state: Literals(
      ['running', 'stopped'] as const,
      'What the connector converges to: what start/stop asked for, or running while a running pipeline uses it and it was not stopped after that pipeline started (docs/api.md, "Effective state")',
    ),
    desired_state_reason: Nullable(
      Type.String({ description: 'Why desired_state is what it is, e.g. "Run by pipeline orders-copy"' }),
    ),
    status_message: Nullable(Type.String({ description: "The worker's last error, when any" })),
    worker: Type.Union([ConnectorWorkerRead, Type.Null()], {
      description: 'Restarts and last termination of its worker; null until a worker ran',
    }),
    datamodel_ids: Type.Array(Uuid, { description: 'Data models of its capture list (sources)' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'ConnectorRead', additionalProperties: false },
);
export type ConnectorRead = Static<typeof ConnectorRead>;
export const ConnectorPage = Page(ConnectorRead, 'Page_ConnectorRead');

const Search = Type.String({ minLength: 1, maxLength: 255, description: 'Part of the name, any case' });
export const ConnectorListQuery = Type.Composite([
  PageQuery,
  Type.Object({
    team_id: Type.Optional(Uuid),
    connector_type: Type.Optional(ConnectorTypeValue),
    status: Type.Optional(ConnectorStateValue),
    search: Type.Optional(Search),
  }),
]);
export type ConnectorListQuery = Static<typeof ConnectorListQuery>;

export const CatalogFilterOneQuery = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  team_id: Type.Optional(Uuid),
});
export type CatalogFilterOneQuery = Static<typeof CatalogFilterOneQuery>;

/** 202 bodies of start/stop/pause: the state the call moved to, in upper case (spec 2.6). */
export const StateString = Type.String({ description: 'The new state in upper case, e.g. "BUILDING"' });

// --- Data models -------------------------------------------------------------

const errorTableFields = {
  error_table_enabled: Type.Boolean(),
  error_table_name: Nullable(Type.String({ minLength: 1, maxLength: 255 })),
  error_table_target_id: Nullable(Uuid),
};

export const DataModelRead = Type.Object(
  {
    id: Uuid,
    name: Type.String({ description: '{connector name}_{entry}' }),
    connector_id: Uuid,
    team_id: Uuid,
    entry: Type.String({ description: 'The table or topic of the capture list' }),
    enabled: Type.Boolean(),
    source_topic: Nullable(Type.String()),
    target_topic: Nullable(Type.String()),
    ...errorTableFields,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'DataModelRead', additionalProperties: false },
);
export type DataModelRead = Static<typeof DataModelRead>;
export const DataModelPage = Page(DataModelRead, 'Page_DataModelRead');
export const DataModelListQuery = Type.Composite([
  PageQuery,
  Type.Object({
    team_id: Type.Optional(Uuid),
    connector_id: Type.Optional(Uuid),
    enabled: Type.Optional(Type.Boolean()),
    search: Type.Optional(Search),
  }),
]);
export type DataModelListQuery = Static<typeof DataModelListQuery>;

export const ErrorTableUpdate = Type.Object(
  {
    error_table_enabled: Type.Optional(Type.Boolean()),
    error_table_name: Type.Optional(errorTableFields.error_table_name),
    error_table_target_id: Type.Optional(errorTableFields.error_table_target_id),
  },
  {
    $id: 'ErrorTableUpdate',
    additionalProperties: false,
    description: 'Enabling needs a name; the target, when given, is a connector of the same team',
  },
);
export type ErrorTableUpdate = Static<typeof ErrorTableUpdate>;

export const DataModelSchemaRead = Type.Object(
  {
    datamodel_id: Uuid,
    source: Literals(
      ['catalog', 'messages', 'worker', 'registry', 'none'] as const,
      "catalog: the columns of the table in the source database's catalog (database sources, read at " +
        "most once a minute); registry: the latest version registered under the data model's name " +
        '(POST /schemas/{subject}); messages: inferred from the recent JSON messages of the topic ' +
        '(Kafka sources; nested fields as mapper paths a|b; a registered schema wins over it); worker: ' +
        'written to the status by someone else; none: not known yet (docs/data-plane.md, "Monitoring")',
    ),
    subject: Nullable(Type.String()),
    version: Nullable(Type.Integer()),
    schema_type: Nullable(Literals(['AVRO', 'JSON'] as const)),
    schema: Nullable(Type.String({ description: 'The registered definition' })),
    fields: Type.Array(
      Type.Object(
        { name: Type.String(), type: Type.String(), nullable: Type.Boolean() },
        { additionalProperties: false },
      ),
    ),
    updated_at: Nullable(Timestamp),
  },
  { $id: 'DataModelSchemaRead', additionalProperties: false },
);
export type DataModelSchemaRead = Static<typeof DataModelSchemaRead>;

/** The replication slot of a PostgreSQL source (null for other sources, or before the slot exists). */
const retainedWal = {
  retained_wal_bytes: Nullable(
    Type.Integer({
      minimum: 0,
      description:
        "WAL the PostgreSQL source keeps for the source connector's replication slot " +
        '(pg_current_wal_lsn() - restart_lsn); measured while the pipeline is paused too',
    }),
  ),
  retained_wal_measured_at: Nullable(Timestamp),
};

export const MonitoringRead = Type.Object(
  {
    id: Uuid,
    messages_in: Type.Integer({
      minimum: 0,
      description: "Change events the source connector's worker published to the data model's stream",
    }),
    messages_out: Type.Integer({
      minimum: 0,
      description: 'Messages the target workers of its subscriptions confirmed (all subscriptions added up)',
    }),
    errors: Type.Integer({ minimum: 0, description: 'Messages its subscriptions could not deliver' }),
    last_event_at: Nullable(Timestamp),
    latency_ms: Nullable(
      Type.Object(
        {
          p50: Type.Number(),
          p95: Type.Number(),
          p99: Type.Number(),
          samples: Type.Integer({ minimum: 0 }),
        },
        {
          additionalProperties: false,
          description: "End-to-end latency over its subscriptions, from the target workers' histograms",
        },
      ),
    ),
    ...retainedWal,
    reported_at: Nullable(Timestamp),
    as_of: Timestamp,
  },
  {
    $id: 'MonitoringRead',
    additionalProperties: false,
    description:
      "Figures the operator adds up from the workers' /metrics every SLUICE_MONITORING_INTERVAL_MS " +
      '(15 s): counters accumulate across worker restarts; reported_at is when they last changed. Zeros ' +
      'and nulls until a worker has run (docs/data-plane.md, "Monitoring")',
  },
);
export type MonitoringRead = Static<typeof MonitoringRead>;

// --- Subscriptions -----------------------------------------------------------

const mapperDescription =
  'Mapper column rules (spec 2.10; POST /smt/process_mapper tries them). encrypt_key takes a value or a ' +
  'valueFrom reference and reads back as <redacted>.';
const MapperConfig = Type.Array(Type.Record(Type.String(), Type.Unknown()), {
  description: mapperDescription,
});
const subscriptionFields = {
  name: HumanName,
  target_table_name: Type.String({
    minLength: 1,
    maxLength: 255,
    description: 'Output table; the output topic for message-broker targets. Default: the data model name',
  }),
  mapper_config: MapperConfig,
  smt_config: Type.Array(Type.Record(Type.String(), Type.Unknown()), {
    description: 'Alias of mapper_config (spec 2.9)',
  }),
  consumer_id: Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9._-]+$' }),
  backfill: Type.Boolean(),
  enabled: Type.Boolean(),
  ...errorTableFields,
};
export const SubscriptionUpdate = Type.Partial(Type.Object(subscriptionFields), {
  $id: 'SubscriptionUpdate',
  additionalProperties: false,
});
export const SubscriptionCreate = Type.Composite(
  [
    Type.Object({ datamodel_id: Uuid, target_connector_id: Uuid }),
    Type.Partial(Type.Object(subscriptionFields)),
  ],
  { $id: 'SubscriptionCreate', additionalProperties: false },
);
export type SubscriptionCreate = Static<typeof SubscriptionCreate>;
export type SubscriptionUpdate = Static<typeof SubscriptionUpdate>;

export const SubscribeAll = Type.Object(
  {
    datamodel_ids: Type.Array(Uuid, { minItems: 1, maxItems: 100, uniqueItems: true }),
    target_connector_ids: Type.Array(Uuid, { minItems: 1, maxItems: 20, uniqueItems: true }),
    mapper_config: Type.Optional(MapperConfig),
    backfill: Type.Optional(Type.Boolean()),
    enabled: Type.Optional(Type.Boolean()),
  },
  {
    $id: 'SubscribeAll',
    additionalProperties: false,
    description:
      'One subscription per (data model, target) pair, all in one go or none: each delivers to a table ' +
      'named after its data model; any invalid pair fails the whole request (422, located).',
  },
);
export type SubscribeAll = Static<typeof SubscribeAll>;

/** What the gateway decided about re-snapshotting a new subscription with `backfill` (docs/data-plane.md "Backfills"). */
export const AutoBackfillRead = Nullable(
  Type.Object(
    {
      state: Literals(['pending', 'started', 'skipped', 'unchecked'] as const),
      reason: Type.String({ description: 'Why, in one sentence' }),
      backfill_id: Nullable(Uuid),
      decided_at: Nullable(Timestamp),
    },
    {
      additionalProperties: false,
      description:
        'The automatic re-snapshot of a subscription with `backfill`; null without `backfill`. ' +
        '`pending`: decided once the subscription, its data model and both connectors are live ' +
        '(for `backfill` turned on after creation: replayed then, in the source mode, when its ' +
        'consumer had read the stream; decided as a new subscription when it had not). ' +
        "`started`: the stream no longer began with the source's snapshot, so the snapshot run " +
        '`backfill_id` (GET /backfills/{id}) was started. `skipped`: none was needed or possible, ' +
        '`reason` says which. `unchecked`: the gateway will not decide (the feature is off, or the ' +
        'subscription was not live within SLUICE_AUTO_BACKFILL_MAX_AGE_HOURS of its creation); ' +
        'POST /backfills/ re-snapshots it by hand.',
    },
  ),
);
export type AutoBackfillRead = Static<typeof AutoBackfillRead>;

export const SubscriptionRead = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    datamodel_id: Uuid,
    target_connector_id: Uuid,
    team_id: Uuid,
    target_table_name: Type.String(),
    mapper_config: MapperConfig,
    consumer_id: Type.String(),
    backfill: Type.Boolean(),
    auto_backfill: AutoBackfillRead,
    enabled: Type.Boolean(),
    ...errorTableFields,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'SubscriptionRead', additionalProperties: false },
);
export type SubscriptionRead = Static<typeof SubscriptionRead>;
export const SubscriptionList = Type.Array(SubscriptionRead, { $id: 'SubscriptionList' });
export const SubscriptionPage = Page(SubscriptionRead, 'Page_SubscriptionRead');
export const SubscriptionListQuery = Type.Composite([
  PageQuery,
  Type.Object({
    team_id: Type.Optional(Uuid),
    datamodel_id: Type.Optional(Uuid),
    target_connector_id: Type.Optional(Uuid),
    enabled: Type.Optional(Type.Boolean()),
    search: Type.Optional(Search),
  }),
]);
export type SubscriptionListQuery = Static<typeof SubscriptionListQuery>;

// --- Pipelines ---------------------------------------------------------------

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
  source_config: N(Configuration),
  existing_target_id: N(Uuid),
  target_name: N(HumanName),
  target_type: N(ConnectorTypeValue),
  target_config: N(Configuration),
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
    source_config: Configuration,
    target_name: HumanName,
    target_type: ConnectorTypeValue,
    target_config: Configuration,
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
    source_config: Configuration,
    target_name: Type.String(),
    target_type: ConnectorTypeValue,
    target_config: Configuration,
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
    source_config: Configuration,
    existing_target_id: Nullable(Uuid),
    target_connector_id: Uuid,
    target_name: Type.String(),
    target_type: ConnectorTypeValue,
    target_config: Configuration,
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
    search: Type.Optional(Search),
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
    ...retainedWal,
    reported_at: Nullable(Timestamp),
  },
  {
    $id: 'PipelineLatency',
    additionalProperties: false,
    description:
      "End-to-end latency the target worker reports (source event time → row written), from its histogram's " +
      'buckets (p50/p95/p99 of the current worker run), with the counters and, for a PostgreSQL source, the WAL ' +
      'its replication slot retains; null until then (docs/data-plane.md, "Monitoring")',
  },
);
export type PipelineLatency = Static<typeof PipelineLatency>;
