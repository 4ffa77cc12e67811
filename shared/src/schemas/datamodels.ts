import { Type, type Static } from '@sinclair/typebox';
import { Literals, NameSearch, Nullable, Page, PageQuery, Timestamp, Uuid } from './common.js';

// REST bodies of data models (spec 2.8, 4.6): snake_case, as the spec writes them.

export const errorTableFields = {
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
    search: Type.Optional(NameSearch),
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

/**
 * What a source makes its server keep: the replication slot of a PostgreSQL
 * source, the binary logs of a MySQL or MariaDB source (null for other
 * sources, or before they were measured).
 */
export const sourceRetention = {
  retained_wal_bytes: Nullable(
    Type.Integer({
      minimum: 0,
      description:
        "WAL the PostgreSQL source keeps for the source connector's replication slot " +
        '(pg_current_wal_lsn() - restart_lsn); measured while the pipeline is paused too',
    }),
  ),
  retained_wal_measured_at: Nullable(Timestamp),
  binlog: Nullable(
    Type.Object(
      {
        needed_file: Type.String({
          description: 'The binary log the recorded position needs (a restart resumes there)',
        }),
        oldest_file: Type.String({ description: 'The oldest binary log the server holds' }),
        current_file: Type.String({ description: 'The binary log the server writes' }),
        logs_before_needed: Type.Integer({
          minimum: -1,
          description:
            'Logs the server holds older than the needed one (purged before it); -1: the needed one is purged',
        }),
        lag_bytes: Type.Integer({
          minimum: 0,
          description: "Bytes of binary log between the capture's position and the server's current one",
        }),
        held_bytes: Type.Integer({ minimum: 0, description: 'Bytes of every binary log the server holds' }),
        expire_seconds: Type.Integer({
          minimum: 0,
          description: 'The server purges logs older than this (binlog_expire_logs_seconds); 0: never',
        }),
        events_per_second: Type.Number({ minimum: 0, description: 'Over the last interval; 0 while paused' }),
        transactions_per_second: Type.Number({
          minimum: 0,
          description: 'Over the last interval; 0 while paused',
        }),
        measured_at: Timestamp,
      },
      {
        additionalProperties: false,
        description:
          'The binary logs of a MySQL or MariaDB source, as the worker (or, while paused, the gateway) last ' +
          'measured them (the connector\'s status.binlog; docs/data-plane-mysql.md, "Monitoring"); null for ' +
          'other sources and before the first measurement',
      },
    ),
  ),
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
    ...sourceRetention,
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
