import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { CONNECTOR_TYPE_IDS } from '../connectors/registry.js';
import type { ClusterObject } from '../ports/cluster.js';
import { UUID_PATTERN } from '../schemas/common.js';
import { API_GROUP } from '../util/version.js';
import { MAX_REPLICAS, REPLICAS_RULE } from './replicas.js';

// The five custom resources of API group sluice.dev/v1alpha1 (architecture
// brief, "Source of truth"): spec and status apart, status written only
// through the status call. Field names are camelCase as Kubernetes resources
// are; the REST API keeps the spec's snake_case and maps between the two in
// the gateway. Object names (`metadata.name`) are UUIDs, which are also the
// REST identifiers; the human name, the team and references live in `spec`
// and in labels so that `kubectl get -l` and the mirror can select on them.
//
// These schemas are structural (one type per node, no top-level unions) so
// that the CRDs can be generated from them; open objects carry
// `x-kubernetes-preserve-unknown-fields`.

export const TEAM_LABEL = `${API_GROUP}/team-id`;
export const CONNECTOR_LABEL = `${API_GROUP}/connector-id`;
export const DATAMODEL_LABEL = `${API_GROUP}/datamodel-id`;
export const TARGET_CONNECTOR_LABEL = `${API_GROUP}/target-connector-id`;
export const PIPELINE_LABEL = `${API_GROUP}/pipeline-id`;
/** The operator's finalizer: the worker goes before the object does. */
export const WORKER_FINALIZER = `${API_GROUP}/worker`;
/**
 * Set by a start call (connector, subscription, pipeline): the time of the
 * call. A later value on a connector, or on a running pipeline that runs it,
 * restarts its worker even when nothing else changed, as `kubectl rollout
 * restart` does with its annotation. Retrying from `error` relies on it.
 */
export const RESTART_ANNOTATION = `${API_GROUP}/restarted-at`;
/**
 * Set by a stop (connector) or pause (subscription, pipeline) call: the time
 * of the call. With RESTART_ANNOTATION it orders a part's explicit calls
 * against its pipeline's, so an explicit stop of a pipeline's connector
 * sticks (effective-state.ts). Metadata, not spec: no generation change.
 */
export const STOP_ANNOTATION = `${API_GROUP}/stopped-at`;

/**
 * Set by the gateway on a PostgreSQL source being deleted, once it tried to
 * drop the source's replication slot and publication (it holds the secrets
 * to connect; the operator does not read them), and on a MySQL or MariaDB
 * source once it tried to delete its position topic on the platform broker:
 * `dropped`, or the sentence saying why not. The operator's finalizer waits
 * for it, a bounded time, before the connector's managed Secret and the
 * connector go (docs/data-plane-postgres.md, "Deleting a source").
 */
export const CAPTURE_RELEASED_ANNOTATION = `${API_GROUP}/capture-released`;
export const CAPTURE_DROPPED = 'dropped';

const Ref = (description: string) => Type.String({ pattern: UUID_PATTERN, description });
const OpenObject = (description: string) =>
  Type.Record(Type.String(), Type.Unknown(), {
    description,
    'x-kubernetes-preserve-unknown-fields': true,
  });
const HumanName = Type.String({ minLength: 1, maxLength: 255, description: 'The name users see' });
const Enum = <T extends string>(values: readonly T[], description: string) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    { description },
  );

/** Kubernetes condition convention (metav1.Condition). */
export const Condition = Type.Object(
  {
    type: Type.String({ description: 'Ready, Progressing or Degraded' }),
    status: Enum(['True', 'False', 'Unknown'] as const, 'Whether the condition holds'),
    reason: Type.String({ description: 'CamelCase reason' }),
    message: Type.String(),
    lastTransitionTime: Type.String({ format: 'date-time' }),
    observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  },
  { additionalProperties: false },
);
export type Condition = Static<typeof Condition>;

/**
 * Figures the operator's monitoring collector adds up from the workers'
 * /metrics (docs/data-plane.md, "Monitoring"); absent until a worker ran.
 * Counters accumulate across worker restarts.
 */
export const Monitoring = Type.Object(
  {
    messagesIn: Type.Integer({ minimum: 0 }),
    messagesOut: Type.Integer({ minimum: 0 }),
    errors: Type.Integer({ minimum: 0 }),
    lastEventTime: Type.Optional(Type.String({ format: 'date-time' })),
    retainedWalBytes: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: "WAL the PostgreSQL source retains for the source connector's replication slot",
      }),
    ),
    latencyMs: Type.Optional(
      Type.Object(
        { p50: Type.Number(), p95: Type.Number(), p99: Type.Number(), samples: Type.Integer({ minimum: 0 }) },
        { additionalProperties: false },
      ),
    ),
    reportedAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);
export type Monitoring = Static<typeof Monitoring>;

const statusCommon = {
  observedGeneration: Type.Optional(Type.Integer({ minimum: 0 })),
  conditions: Type.Optional(Type.Array(Condition)),
  message: Type.Optional(
    Type.String({ description: "The worker's last error, or why the state is what it is" }),
  ),
};

const ErrorTable = Type.Object(
  {
    enabled: Type.Boolean(),
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
    targetConnectorId: Type.Optional(Ref('Connector that receives the error rows')),
  },
  { additionalProperties: false, description: 'Where rows that fail go (spec 2.8, 2.9)' },
);
export type ErrorTable = Static<typeof ErrorTable>;

// --- Connector ---------------------------------------------------------------

export const CONNECTOR_STATES = ['paused', 'building', 'live', 'stopping', 'error'] as const;
export type ConnectorState = (typeof CONNECTOR_STATES)[number];
export const CONNECTOR_DESIRED_STATES = ['running', 'stopped'] as const;
/** What the operator converges a connector to (effective-state.ts): same values as desiredState. */
export const EFFECTIVE_CONNECTOR_STATES = CONNECTOR_DESIRED_STATES;
export type EffectiveConnectorState = (typeof EFFECTIVE_CONNECTOR_STATES)[number];

export const ConnectorSpec = Type.Object(
  {
    name: HumanName,
    teamId: Ref('Owning team'),
    connectorType: Enum(CONNECTOR_TYPE_IDS, 'Connector type (spec 2.13); immutable'),
    configuration: OpenObject(
      'The json_configuration of the type; secret fields hold valueFrom references, never values',
    ),
    desiredState: Enum(CONNECTOR_DESIRED_STATES, 'Set by start/stop; the operator converges to it'),
    replicas: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: MAX_REPLICAS,
        description:
          "Workers of a target connector, sharing its data models' partitions in one consumer group " +
          '(default 1; the scale subresource: kubectl scale, a HorizontalPodAutoscaler, KEDA). ' +
          'A source runs one worker: its replication slot or binary log position has one reader.',
      }),
    ),
  },
  { additionalProperties: false, 'x-kubernetes-validations': [REPLICAS_RULE] },
);
export type ConnectorSpec = Static<typeof ConnectorSpec>;
/** A POSTGRES_SOURCE's slot as last measured (by its worker, or by the gateway while none runs). */
export const ReplicationSlotStatus = Type.Object(
  {
    name: Type.String(),
    retainedWalBytes: Type.Integer({ minimum: 0, description: 'pg_current_wal_lsn() - restart_lsn' }),
    measuredAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);
export type ReplicationSlotStatus = Static<typeof ReplicationSlotStatus>;
/** A MYSQL_SOURCE's or MARIADB_SOURCE's binary logs as its worker last measured them (SHOW BINARY LOGS). */
export const BinlogStatus = Type.Object(
  {
    neededFile: Type.String({
      description: 'The binary log the recorded position needs (a restart resumes there)',
    }),
    oldestFile: Type.String({ description: 'The oldest binary log the server holds' }),
    currentFile: Type.String({ description: 'The binary log the server writes' }),
    logsBeforeNeeded: Type.Integer({
      minimum: -1,
      description: 'Logs held older than the needed one, purged before it; -1: the needed one is purged',
    }),
    lagBytes: Type.Integer({
      minimum: 0,
      description: "Bytes between the capture's position and the server's",
    }),
    heldBytes: Type.Integer({ minimum: 0, description: 'Bytes of every binary log the server holds' }),
    expireSeconds: Type.Integer({
      minimum: 0,
      description: 'The server purges logs older than this; 0: never',
    }),
    eventsPerSecond: Type.Optional(Type.Number({ minimum: 0 })),
    transactionsPerSecond: Type.Optional(Type.Number({ minimum: 0 })),
    measuredAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);
export type BinlogStatus = Static<typeof BinlogStatus>;

/**
 * How a worker's last run ended, the same under both runtimes (Kubernetes:
 * the container status' `lastState.terminated`; one machine: the child's exit).
 */
export const WorkerTermination = Type.Object(
  {
    reason: Type.String({
      description:
        'Error (exited non-zero or killed by a signal), Completed (exited 0), OOMKilled, or StartError (could not be started)',
    }),
    exitCode: Type.Optional(
      Type.Integer({ description: 'Its exit code; 128 + the signal number when a signal killed it' }),
    ),
    signal: Type.Optional(Type.String({ description: 'The signal that killed it, e.g. SIGKILL' })),
    message: Type.Optional(
      Type.String({
        description: 'The error line the worker wrote to its termination message, if it wrote one',
      }),
    ),
    finishedAt: Type.String({ format: 'date-time' }),
  },
  { additionalProperties: false },
);
export type WorkerTermination = Static<typeof WorkerTermination>;

/**
 * The connector's worker as its runtime restarts it (docs/data-plane.md,
 * "Worker restarts"): both runtimes restart a worker that ends, with
 * kubelet's back-off; the connector is `error` only once `consecutiveFailures`
 * reaches the threshold.
 */
export const WorkerStatus = Type.Object(
  {
    restarts: Type.Integer({ minimum: 0, description: 'Restarts of the current worker after it ended' }),
    consecutiveFailures: Type.Integer({
      minimum: 0,
      description: 'Restarts since the worker was last seen ready',
    }),
    lastTermination: Type.Optional(WorkerTermination),
  },
  { additionalProperties: false },
);
export type WorkerStatus = Static<typeof WorkerStatus>;

export const ConnectorStatus = Type.Object(
  {
    state: Type.Optional(Enum(CONNECTOR_STATES, 'Spec 3.2')),
    ...statusCommon,
    effectiveState: Type.Optional(
      Enum(
        EFFECTIVE_CONNECTOR_STATES,
        'What the operator converges to: its own desiredState, or that of a pipeline that uses it',
      ),
    ),
    effectiveReason: Type.Optional(
      Type.String({ description: 'Why effectiveState is what it is, e.g. "Run by pipeline orders-copy"' }),
    ),
    restartRequestedAt: Type.Optional(
      Type.String({
        description:
          "The latest start call its worker was started for (its own or a running pipeline's); a later one restarts it",
      }),
    ),
    replicationSlot: Type.Optional(ReplicationSlotStatus),
    binlog: Type.Optional(BinlogStatus),
    worker: Type.Optional(WorkerStatus),
    replicas: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: "Workers ready now (the scale subresource's status.replicas)",
      }),
    ),
    selector: Type.Optional(
      Type.String({
        description: "The label selector of the worker pods (the scale subresource's status.selector)",
      }),
    ),
  },
  { additionalProperties: false },
);
export type ConnectorStatus = Static<typeof ConnectorStatus>;

// --- DataModel ---------------------------------------------------------------

export const SchemaField = Type.Object(
  { name: Type.String(), type: Type.String(), nullable: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
export const DataModelSpec = Type.Object(
  {
    name: HumanName,
    teamId: Ref('Owning team (that of the connector)'),
    connectorId: Ref('The source connector'),
    entry: Type.String({ minLength: 1, description: 'The capture-list entry (table or topic)' }),
    enabled: Type.Boolean({ description: 'Disabled data models are not captured' }),
    sourceTopic: Type.Optional(Type.String({ minLength: 1 })),
    targetTopic: Type.Optional(Type.String({ minLength: 1 })),
    errorTable: ErrorTable,
  },
  { additionalProperties: false },
);
export type DataModelSpec = Static<typeof DataModelSpec>;
export const DataModelStatus = Type.Object(
  {
    ...statusCommon,
    schema: Type.Optional(
      Type.Object(
        {
          fields: Type.Array(SchemaField),
          discoveredAt: Type.String({ format: 'date-time' }),
          origin: Type.Optional(
            Enum(
              ['catalog', 'messages'] as const,
              "catalog: the source database's catalog; messages: inferred from the topic's recent messages",
            ),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    monitoring: Type.Optional(Monitoring),
  },
  { additionalProperties: false },
);
export type DataModelStatus = Static<typeof DataModelStatus>;

// --- Subscription ------------------------------------------------------------

export const SubscriptionSpec = Type.Object(
  {
    name: HumanName,
    teamId: Ref('Owning team (that of the target connector)'),
    datamodelId: Ref('The data model delivered'),
    targetConnectorId: Ref('The target connector'),
    targetTableName: Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'Table, or topic for brokers',
    }),
    mapperConfig: Type.Array(OpenObject('A mapper column rule (spec 2.10); encrypt_key as a reference'), {
      description: 'The mapper rules',
    }),
    consumerId: Type.String({ minLength: 1, maxLength: 255 }),
    backfill: Type.Boolean(),
    enabled: Type.Boolean(),
    errorTable: ErrorTable,
  },
  { additionalProperties: false },
);
export type SubscriptionSpec = Static<typeof SubscriptionSpec>;
/** Whether a subscription is delivered (effective-state.ts). */
export const EFFECTIVE_SUBSCRIPTION_STATES = ['enabled', 'disabled'] as const;
export type EffectiveSubscriptionState = (typeof EFFECTIVE_SUBSCRIPTION_STATES)[number];
export const SubscriptionStatus = Type.Object(
  {
    ...statusCommon,
    effectiveState: Type.Optional(
      Enum(
        EFFECTIVE_SUBSCRIPTION_STATES,
        'Whether it is delivered: its own enabled switch, or that of a pipeline that uses it',
      ),
    ),
    effectiveReason: Type.Optional(
      Type.String({
        description: 'Why effectiveState is what it is, e.g. "Enabled by pipeline orders-copy"',
      }),
    ),
    monitoring: Type.Optional(Monitoring),
    autoBackfill: Type.Optional(
      Type.Object(
        {
          state: Enum(
            ['started', 'skipped'] as const,
            'started: a backfill run was started (backfillId); skipped: none was needed or possible (reason)',
          ),
          reason: Type.String({ description: 'Why, in one sentence' }),
          backfillId: Type.Optional(Type.String({ description: 'The run: GET /api/backfills/{id}' })),
          decidedAt: Type.String({ format: 'date-time' }),
        },
        {
          additionalProperties: false,
          description:
            "The gateway's decision on re-snapshotting this subscription, new with `backfill` or with " +
            '`backfill` turned on later (docs/data-plane.md "Backfills"); the API shows it as `auto_backfill`',
        },
      ),
    ),
  },
  { additionalProperties: false },
);
export type SubscriptionStatus = Static<typeof SubscriptionStatus>;

// --- Pipeline ----------------------------------------------------------------

export const PIPELINE_STATES = ['draft', 'building', 'live', 'paused', 'error'] as const;
export type PipelineState = (typeof PIPELINE_STATES)[number];
export const PIPELINE_DESIRED_STATES = ['draft', 'running', 'paused'] as const;

export const PipelineSpec = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9_-]+$' }),
    teamId: Ref('Owning team'),
    sourceConnectorId: Ref('Source connector'),
    targetConnectorId: Ref('Target connector'),
    datamodelId: Ref('The data model the pipeline delivers'),
    subscriptionId: Ref('The subscription the pipeline owns'),
    ownsSource: Type.Boolean({ description: 'The pipeline created its source and deletes it with itself' }),
    ownsTarget: Type.Boolean({ description: 'The pipeline created its target and deletes it with itself' }),
    desiredState: Enum(PIPELINE_DESIRED_STATES, 'Set by start/pause'),
    version: Type.Integer({ minimum: 1, description: 'Spec 2.6: 1 at creation, +1 on every change' }),
    smtName: Type.Optional(Type.String({ maxLength: 255 })),
    draftStep: Type.Optional(Type.String({ maxLength: 255 })),
  },
  { additionalProperties: false },
);
export type PipelineSpec = Static<typeof PipelineSpec>;
export const PipelineStatus = Type.Object(
  {
    state: Type.Optional(Enum(PIPELINE_STATES, 'Spec 3.1')),
    ...statusCommon,
    monitoring: Type.Optional(Monitoring),
  },
  { additionalProperties: false },
);
export type PipelineStatus = Static<typeof PipelineStatus>;

// --- Warehouse ---------------------------------------------------------------

export const WAREHOUSE_STATES = ['Draft', 'Live', 'Error'] as const;
export const WarehouseSpec = Type.Object(
  {
    name: HumanName,
    teamId: Ref('Owning team'),
    serverHostname: Type.String({ minLength: 1, maxLength: 255 }),
    httpPath: Type.String({ minLength: 1, maxLength: 255 }),
    accessToken: OpenObject('A valueFrom reference to the access token'),
    catalog: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]+$' })),
    schema: Type.Optional(Type.String({ pattern: '^[A-Za-z0-9_-]+$' })),
  },
  { additionalProperties: false },
);
export type WarehouseSpec = Static<typeof WarehouseSpec>;
export const WarehouseStatus = Type.Object(
  {
    state: Type.Optional(Enum(WAREHOUSE_STATES, 'Spec 3.3')),
    ...statusCommon,
    testedAt: Type.Optional(Type.String({ format: 'date-time' })),
    connectionFingerprint: Type.Optional(
      Type.String({
        description:
          'Digest of the connection settings the last test ran with (hostname, HTTP path, token reference, ' +
          "catalog, schema): the operator tests again when the spec's differs",
      }),
    ),
  },
  { additionalProperties: false },
);
export type WarehouseStatus = Static<typeof WarehouseStatus>;

// --- The kinds ---------------------------------------------------------------

export type ConnectorResource = ClusterObject<ConnectorSpec, ConnectorStatus> & { kind: 'Connector' };
export type DataModelResource = ClusterObject<DataModelSpec, DataModelStatus> & { kind: 'DataModel' };
export type SubscriptionResource = ClusterObject<SubscriptionSpec, SubscriptionStatus> & {
  kind: 'Subscription';
};
export type PipelineResource = ClusterObject<PipelineSpec, PipelineStatus> & { kind: 'Pipeline' };
export type WarehouseResource = ClusterObject<WarehouseSpec, WarehouseStatus> & { kind: 'Warehouse' };

export interface ResourceSchemas {
  spec: TSchema;
  status: TSchema;
  /** Plural lower-case name (the CRD's `spec.names.plural`). */
  plural: string;
  shortNames: string[];
}

/** Per kind: the schemas the CRDs and the contract tests are built from. */
export const RESOURCE_SCHEMAS = {
  Connector: { spec: ConnectorSpec, status: ConnectorStatus, plural: 'connectors', shortNames: ['sconn'] },
  DataModel: { spec: DataModelSpec, status: DataModelStatus, plural: 'datamodels', shortNames: ['sdm'] },
  Subscription: {
    spec: SubscriptionSpec,
    status: SubscriptionStatus,
    plural: 'subscriptions',
    shortNames: ['ssub'],
  },
  Pipeline: { spec: PipelineSpec, status: PipelineStatus, plural: 'pipelines', shortNames: ['spl'] },
  Warehouse: { spec: WarehouseSpec, status: WarehouseStatus, plural: 'warehouses', shortNames: ['swh'] },
} as const satisfies Record<string, ResourceSchemas>;
