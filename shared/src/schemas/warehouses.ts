import { Type, type Static } from '@sinclair/typebox';
import { WAREHOUSE_STATES } from '../catalog/resources.js';
import { SecretRef, secretField } from '../connectors/secret.js';
import { STATEMENT_STATES } from '../databricks/client.js';
import { HumanName, Literals, Nullable, Page, PageQuery, Timestamp, Uuid } from './common.js';

// REST bodies of warehouses (spec 2.12, 3.3; the endpoints are ours,
// docs/warehouses.md): snake_case as the rest of the API. The custom
// resource behind a warehouse is `Warehouse` (catalog/resources.ts); its
// tasks and their runs live in the service database.

export const WarehouseStatusValue = Literals(
  WAREHOUSE_STATES,
  'Spec 3.3: Draft (never tested), Live (last test passed), Error (last test failed)',
);

const settings = {
  server_hostname: Type.String({
    minLength: 1,
    maxLength: 2048,
    description:
      'Server hostname of the workspace, without scheme (a pasted URL is reduced to its host), e.g. ' +
      'adb-1234567890123456.7.azuredatabricks.net',
  }),
  http_path: Type.String({
    minLength: 1,
    maxLength: 255,
    description:
      'HTTP path of a SQL warehouse, /sql/1.0/warehouses/<id>; cluster paths (/sql/protocolv1/…) are refused',
  }),
  access_token: secretField(
    'Personal access token (or a valueFrom reference); encrypted at rest, reads back as <redacted>; ' +
      'sending <redacted> back keeps the stored token',
  ),
  catalog: Nullable(
    Type.String({
      maxLength: 255,
      description: 'Default catalog for unqualified statements: letters, digits, underscores, hyphens',
    }),
  ),
  schema: Nullable(
    Type.String({ maxLength: 255, description: 'Default schema; needs a catalog. Same characters' }),
  ),
};

export const WarehouseCreate = Type.Object(
  {
    name: HumanName,
    team_id: Uuid,
    server_hostname: settings.server_hostname,
    http_path: settings.http_path,
    access_token: settings.access_token,
    catalog: Type.Optional(settings.catalog),
    schema: Type.Optional(settings.schema),
  },
  {
    $id: 'WarehouseCreate',
    additionalProperties: false,
    description:
      'Created Draft; the operator then runs the connection test (as for a Warehouse applied with kubectl), ' +
      'and POST /warehouses/{id}/test runs it again',
  },
);
export type WarehouseCreate = Static<typeof WarehouseCreate>;

export const WarehouseUpdate = Type.Object(
  {
    name: Type.Optional(HumanName),
    team_id: Type.Optional(Uuid),
    server_hostname: Type.Optional(settings.server_hostname),
    http_path: Type.Optional(settings.http_path),
    access_token: Type.Optional(settings.access_token),
    catalog: Type.Optional(settings.catalog),
    schema: Type.Optional(settings.schema),
  },
  {
    $id: 'WarehouseUpdate',
    additionalProperties: false,
    description:
      'Omitted fields keep their values; null clears catalog or schema. A change of hostname, HTTP path, ' +
      'token, catalog or schema runs the connection test first and is saved only if it passes (422 with ' +
      "the engine's message otherwise, nothing changed). A rename or a team change is saved without a test.",
  },
);
export type WarehouseUpdate = Static<typeof WarehouseUpdate>;

export const WarehouseRead = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    team_id: Uuid,
    team_name: Type.String(),
    server_hostname: Type.String(),
    http_path: Type.String(),
    warehouse_id: Type.String({ description: 'The SQL warehouse id, from the HTTP path' }),
    access_token: Type.Union([Type.Literal('<redacted>'), SecretRef], {
      description: '<redacted>, or the valueFrom reference you gave',
    }),
    catalog: Nullable(Type.String()),
    schema: Nullable(Type.String()),
    status: WarehouseStatusValue,
    status_message: Nullable(Type.String({ description: "Why the last test failed, in the engine's words" })),
    tested_at: Nullable(Timestamp),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'WarehouseRead', additionalProperties: false },
);
export type WarehouseRead = Static<typeof WarehouseRead>;
export const WarehousePage = Page(WarehouseRead, 'Page_WarehouseRead');

export const WarehouseListQuery = Type.Composite([
  PageQuery,
  Type.Object({
    team_id: Type.Optional(Uuid),
    status: Type.Optional(WarehouseStatusValue),
    search: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'Part of the name, any case' }),
    ),
  }),
]);
export type WarehouseListQuery = Static<typeof WarehouseListQuery>;

// --- Statements --------------------------------------------------------------

export const StatementSubmit = Type.Object(
  {
    statement: Type.String({ minLength: 1, maxLength: 1_000_000, description: 'One SQL statement' }),
    row_limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        description:
          'At most this many rows come back (and at most the server limit, SLUICE_WAREHOUSE_ROW_LIMIT)',
      }),
    ),
    timeout_s: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 3600,
        description:
          'Cancel the statement when it has not ended by then (default and maximum: SLUICE_WAREHOUSE_STATEMENT_TIMEOUT_S)',
      }),
    ),
  },
  { $id: 'StatementSubmit', additionalProperties: false },
);
export type StatementSubmit = Static<typeof StatementSubmit>;

export const StatementResult = Type.Object(
  {
    statement_id: Nullable(Type.String({ description: "The engine's statement id" })),
    state: Literals(
      STATEMENT_STATES,
      "The engine's final state (CANCELED with timed_out after the deadline)",
    ),
    timed_out: Type.Boolean(),
    error: Nullable(
      Type.Object(
        { code: Nullable(Type.String()), message: Type.String(), sql_state: Nullable(Type.String()) },
        { additionalProperties: false },
      ),
    ),
    columns: Type.Array(
      Type.Object({ name: Type.String(), type: Nullable(Type.String()) }, { additionalProperties: false }),
    ),
    rows: Type.Array(Type.Array(Nullable(Type.String())), {
      description: 'JSON_ARRAY rows: every non-null value as a string',
    }),
    row_count: Type.Integer({ minimum: 0 }),
    truncated: Type.Boolean({ description: 'More rows exist than came back' }),
  },
  {
    $id: 'StatementResult',
    additionalProperties: false,
    description: 'Relayed, not stored: the service keeps no rows',
  },
);
export type StatementResult = Static<typeof StatementResult>;

// --- Tasks ---------------------------------------------------------------------

export const TASK_RUN_STATES = ['RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELED'] as const;
export type TaskRunState = (typeof TASK_RUN_STATES)[number];

const taskFields = {
  name: HumanName,
  statement: Type.String({ minLength: 1, maxLength: 1_000_000, description: 'The SQL statement it runs' }),
  schedule: Type.String({
    minLength: 1,
    maxLength: 255,
    description:
      'Cron expression of five fields (minute hour day-of-month month day-of-week), e.g. "30 2 * * 1-5", or ' +
      '@hourly, @daily, @weekly, @monthly, @yearly',
  }),
  timezone: Type.String({
    minLength: 1,
    maxLength: 64,
    description: 'IANA time zone the schedule is read in, e.g. Europe/Paris (default UTC)',
  }),
  paused: Type.Boolean({ description: 'A paused task is not run on its schedule' }),
};

export const TaskCreate = Type.Object(
  {
    name: taskFields.name,
    statement: taskFields.statement,
    schedule: taskFields.schedule,
    timezone: Type.Optional(taskFields.timezone),
    paused: Type.Optional(taskFields.paused),
  },
  { $id: 'WarehouseTaskCreate', additionalProperties: false },
);
export type TaskCreate = Static<typeof TaskCreate>;

export const TaskUpdate = Type.Object(
  {
    name: Type.Optional(taskFields.name),
    statement: Type.Optional(taskFields.statement),
    schedule: Type.Optional(taskFields.schedule),
    timezone: Type.Optional(taskFields.timezone),
  },
  {
    $id: 'WarehouseTaskUpdate',
    additionalProperties: false,
    description: 'Pause and resume have their own calls',
  },
);
export type TaskUpdate = Static<typeof TaskUpdate>;

export const TaskRunRead = Type.Object(
  {
    id: Uuid,
    task_id: Uuid,
    trigger: Literals(['schedule', 'manual'] as const),
    scheduled_for: Nullable(Timestamp),
    started_at: Timestamp,
    finished_at: Nullable(Timestamp),
    state: Literals(TASK_RUN_STATES),
    statement_id: Nullable(Type.String()),
    error: Nullable(Type.String()),
  },
  { $id: 'WarehouseTaskRunRead', additionalProperties: false },
);
export type TaskRunRead = Static<typeof TaskRunRead>;
export const TaskRunPage = Page(TaskRunRead, 'Page_WarehouseTaskRunRead');

export const TaskRead = Type.Object(
  {
    id: Uuid,
    warehouse_id: Uuid,
    name: Type.String(),
    statement: Type.String(),
    schedule: Type.String(),
    timezone: Type.String(),
    paused: Type.Boolean(),
    next_run_at: Nullable(Timestamp),
    last_runs: Type.Array(TaskRunRead, { description: 'The newest runs first (at most 5)' }),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'WarehouseTaskRead', additionalProperties: false },
);
export type TaskRead = Static<typeof TaskRead>;
export const TaskPage = Page(TaskRead, 'Page_WarehouseTaskRead');

export const TaskParams = Type.Object({ id: Uuid, task_id: Uuid });
