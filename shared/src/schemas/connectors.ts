import { Type, type Static } from '@sinclair/typebox';
import { MAX_REPLICAS } from '../catalog/replicas.js';
import { CONNECTOR_STATES } from '../catalog/resources.js';
import { CONNECTOR_TYPE_IDS } from '../connectors/registry.js';
import { HumanName, Literals, NameSearch, Nullable, Page, PageQuery, Timestamp, Uuid } from './common.js';

// REST bodies of connectors (spec 2.7, 4.5): snake_case, as the spec writes
// them. The custom resource behind them is in catalog/resources.ts.

export const ConnectorTypeValue = Literals(CONNECTOR_TYPE_IDS, 'Connector type (spec 2.13)');
export const ConnectorStateValue = Literals(CONNECTOR_STATES, 'Spec 3.2');

export const ConnectorConfiguration = Type.Record(Type.String(), Type.Unknown(), {
  description:
    'The json_configuration of the type (GET /connector-types/): secret fields take a value or ' +
    '`{valueFrom: {secretKeyRef: {name, key}}}` and read back as `<redacted>`',
});

export const ConnectorReplicas = Type.Integer({
  minimum: 1,
  maximum: MAX_REPLICAS,
  description:
    "Workers of a target connector (default 1): they share its data models' partitions in one consumer " +
    'group, each key in order. A source takes only 1: its replication slot or binary log position has one ' +
    'reader (422 otherwise). On Kubernetes also `kubectl scale connector/<id>`, an HPA or KEDA.',
});

export const ConnectorCreate = Type.Object(
  {
    name: HumanName,
    connector_type: ConnectorTypeValue,
    json_configuration: ConnectorConfiguration,
    team_id: Uuid,
    replicas: Type.Optional(ConnectorReplicas),
  },
  { $id: 'ConnectorCreate', additionalProperties: false },
);
export type ConnectorCreate = Static<typeof ConnectorCreate>;

export const ConnectorUpdate = Type.Object(
  {
    name: Type.Optional(HumanName),
    json_configuration: Type.Optional(ConnectorConfiguration),
    team_id: Type.Optional(Uuid),
    connector_type: Type.Optional(ConnectorTypeValue),
    replicas: Type.Optional(ConnectorReplicas),
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
    json_configuration: ConnectorConfiguration,
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
    replicas: ConnectorReplicas,
    ready_replicas: Type.Integer({ minimum: 0, description: 'Its workers ready now' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'ConnectorRead', additionalProperties: false },
);
export type ConnectorRead = Static<typeof ConnectorRead>;
export const ConnectorPage = Page(ConnectorRead, 'Page_ConnectorRead');

export const ConnectorListQuery = Type.Composite([
  PageQuery,
  Type.Object({
    team_id: Type.Optional(Uuid),
    connector_type: Type.Optional(ConnectorTypeValue),
    status: Type.Optional(ConnectorStateValue),
    search: Type.Optional(NameSearch),
  }),
]);
export type ConnectorListQuery = Static<typeof ConnectorListQuery>;
