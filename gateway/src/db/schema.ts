import type { ColumnType, Generated, Insertable, Selectable, Updateable } from 'kysely';

// Row types of the identity & tenancy tables (migrations/ creates them).
// Services return domain types (shared/), never these.

/** Written as Date or ISO string, read as Date; optional on insert where the column has a default. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type DefaultTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
type NullableTimestamp = ColumnType<Date | null, Date | string | null, Date | string | null>;

export interface UsersTable {
  id: Generated<string>;
  email: string;
  hashed_password: string;
  is_active: Generated<boolean>;
  is_superuser: Generated<boolean>;
  is_verified: Generated<boolean>;
  is_service_account: Generated<boolean>;
  active_env_id: string | null;
  /** Tokens issued before this instant are refused (set by every password change). */
  tokens_valid_after: NullableTimestamp;
  /** The id of the one older token still accepted: the one a user changed their own password with. */
  tokens_kept_jti: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
}

export interface EnvsTable {
  id: Generated<string>;
  name: string;
  description: string | null;
  use_retention: Generated<boolean>;
  /** The broker settings without the password (jsonb). */
  retention_configuration: unknown;
  /** `sasl_password` sealed by SecretBox. */
  broker_secret: string | null;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
}

export interface EnvMembersTable {
  user_id: string;
  env_id: string;
  admin: boolean;
}

export interface TeamsTable {
  id: Generated<string>;
  env_id: string;
  name: string;
  description: string | null;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
}

export interface TeamMembersTable {
  user_id: string;
  team_id: string;
  admin: boolean;
}

export interface RevokedTokensTable {
  jti: string;
  expires_at: Timestamp;
}

export interface ActionTokensTable {
  /** SHA-256 of the token sent by mail; the token itself is never stored. */
  token_hash: string;
  user_id: string;
  purpose: 'reset' | 'verify';
  expires_at: Timestamp;
  created_at: DefaultTimestamp;
}

export interface IdempotencyKeysTable {
  user_id: string;
  key: string;
  request_hash: string;
  status: number | null;
  body: unknown;
  created_at: DefaultTimestamp;
}

export interface ServiceAccountTokensTable {
  id: string;
  name: string;
  owner_id: string;
  user_id: string;
  env_id: string;
  team_id: string | null;
  created_at: DefaultTimestamp;
  expires_at: Timestamp;
  revoked_at: NullableTimestamp;
}

export interface ApiKeysTable {
  id: Generated<string>;
  name: string;
  prefix: string;
  key_hash: string;
  user_id: string;
  created_by: string;
  admin: boolean;
  env_ids: unknown;
  created_at: DefaultTimestamp;
  last_used_at: NullableTimestamp;
  revoked_at: NullableTimestamp;
}

/** Schema registry: one row per version of a subject (features/schemas). */
export interface SchemasTable {
  id: Generated<string>;
  subject: string;
  version: number;
  schema_type: 'AVRO' | 'JSON';
  /** The definition as first registered. */
  schema: string;
  /** SHA-256 (hex) of the canonical form: parsed, keys sorted, no whitespace. */
  fingerprint: string;
  created_at: DefaultTimestamp;
}

export interface Database {
  users: UsersTable;
  envs: EnvsTable;
  env_members: EnvMembersTable;
  teams: TeamsTable;
  team_members: TeamMembersTable;
  revoked_tokens: RevokedTokensTable;
  action_tokens: ActionTokensTable;
  idempotency_keys: IdempotencyKeysTable;
  service_account_tokens: ServiceAccountTokensTable;
  api_keys: ApiKeysTable;
  schemas: SchemasTable;
  mirror_connectors: MirrorConnectorsTable;
  mirror_datamodels: MirrorDataModelsTable;
  mirror_subscriptions: MirrorSubscriptionsTable;
  mirror_pipelines: MirrorPipelinesTable;
  mirror_warehouses: MirrorWarehousesTable;
  mirror_cursors: MirrorCursorsTable;
  warehouse_tasks: WarehouseTasksTable;
  warehouse_task_runs: WarehouseTaskRunsTable;
  backfill_runs: BackfillRunsTable;
  backfill_items: BackfillItemsTable;
  backfill_active_sources: BackfillActiveSourcesTable;
  auto_backfills: AutoBackfillsTable;
  deletions: DeletionsTable;
}

export type UserRow = Selectable<UsersTable>;
export type NewUser = Insertable<UsersTable>;
export type UserPatch = Updateable<UsersTable>;
export type EnvRow = Selectable<EnvsTable>;
export type TeamRow = Selectable<TeamsTable>;
export type SchemaRow = Selectable<SchemasTable>;

/** Columns every mirror table has (migration 0005-mirror, gateway/src/mirror). */
export interface MirrorCommon {
  id: string;
  namespace: string;
  team_id: string | null;
  name: string;
  resource_version: ColumnType<string, string | bigint, string | bigint>;
  generation: ColumnType<string, string | number, string | number>;
  spec: ColumnType<unknown, string, string>;
  status: ColumnType<unknown, string | null, string | null>;
  deleting: ColumnType<boolean, boolean | undefined, boolean>;
  deleted: ColumnType<boolean, boolean | undefined, boolean>;
  created_at: Timestamp;
  updated_at: Timestamp;
}
export interface MirrorConnectorsTable extends MirrorCommon {
  connector_type: string;
  direction: string;
  state: string;
  desired_state: string;
}
export interface MirrorDataModelsTable extends MirrorCommon {
  connector_id: string;
  entry: string;
  enabled: boolean;
}
export interface MirrorSubscriptionsTable extends MirrorCommon {
  datamodel_id: string;
  target_connector_id: string;
  enabled: boolean;
  /** When `backfill` last went from off to on after creation (migration 0010; the mirror writes it). */
  backfill_on_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
  /**
   * Whether the consumer group had committed offsets on the stream at that
   * switch (migration 0011): null until the backfill runner's tick looked.
   */
  backfill_on_consumed: ColumnType<boolean | null, boolean | null | undefined, boolean | null>;
}
export interface MirrorPipelinesTable extends MirrorCommon {
  state: string;
  version: number;
  source_connector_id: string;
  target_connector_id: string;
  datamodel_id: string;
  subscription_id: string;
}
export interface MirrorWarehousesTable extends MirrorCommon {
  state: string;
}
/** Keyed by (kind, namespace); namespace `*` is a cluster-wide loop (migration 0007). */
export interface MirrorCursorsTable {
  kind: string;
  namespace: string;
  resource_version: ColumnType<string, string | bigint, string | bigint>;
  updated_at: DefaultTimestamp;
}
export type MirrorConnectorRow = Selectable<MirrorConnectorsTable>;
export type MirrorDataModelRow = Selectable<MirrorDataModelsTable>;
export type MirrorSubscriptionRow = Selectable<MirrorSubscriptionsTable>;
export type MirrorPipelineRow = Selectable<MirrorPipelinesTable>;
export type MirrorWarehouseRow = Selectable<MirrorWarehousesTable>;

/** Warehouse tasks and their runs (migration 0006, features/warehouses). */
export interface WarehouseTasksTable {
  id: Generated<string>;
  warehouse_id: string;
  name: string;
  statement: string;
  schedule: string;
  timezone: string;
  paused: Generated<boolean>;
  next_run_at: NullableTimestamp;
  created_at: DefaultTimestamp;
  updated_at: DefaultTimestamp;
}
export interface WarehouseTaskRunsTable {
  id: Generated<string>;
  task_id: string;
  trigger: 'schedule' | 'manual';
  scheduled_for: NullableTimestamp;
  started_at: Timestamp;
  finished_at: NullableTimestamp;
  state: 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELED';
  statement_id: string | null;
  error: string | null;
  runner: string;
}
export type WarehouseTaskRow = Selectable<WarehouseTasksTable>;
export type WarehouseTaskRunRow = Selectable<WarehouseTaskRunsTable>;

/** Backfill runs, their items and the sources active runs hold (migration 0008, features/backfills). */
type Json<T> = ColumnType<T, string, string>;
type BigCount = ColumnType<string, number | string, number | string>;
export interface BackfillRunsTable {
  id: Generated<string>;
  team_id: string;
  state: 'pending' | 'running' | 'succeeded' | 'failed' | 'cancelled';
  cancel_requested: Generated<boolean>;
  source_connector_ids: Json<string[]>;
  datamodel_ids: Json<string[]>;
  target_connector_ids: Json<string[]>;
  error: string | null;
  created_by: string | null;
  runner: string | null;
  lease_until: NullableTimestamp;
  created_at: DefaultTimestamp;
  started_at: NullableTimestamp;
  finished_at: NullableTimestamp;
}
export interface BackfillItemsTable {
  run_id: string;
  position: number;
  source_connector_id: string;
  datamodel_id: string;
  datamodel_name: string;
  target_connector_id: string;
  subscription_id: string;
  target_table_name: string;
  mode: 'stream' | 'snapshot';
  state: BackfillRunsTable['state'];
  estimated_messages: BigCount;
  messages_replayed: ColumnType<string, number | string | undefined, number | string>;
  progress: Json<unknown>;
  error: string | null;
}
export interface BackfillActiveSourcesTable {
  source_connector_id: string;
  run_id: string;
}
/** Decisions on new subscriptions with `backfill` (migration 0009, features/backfills/backfills.auto.ts). */
export interface AutoBackfillsTable {
  subscription_id: string;
  decision: 'skipped' | 'started';
  reason: string;
  run_id: string | null;
  decided_at: DefaultTimestamp;
}
export type BackfillRunRow = Selectable<BackfillRunsTable>;
export type BackfillItemRow = Selectable<BackfillItemsTable>;

/** Deletions of teams and environments and their progress (migration 0014, features/deletions). */
export interface DeletionsTable {
  id: Generated<string>;
  kind: 'team' | 'env';
  target_id: string;
  target_name: string;
  env_id: string;
  team_ids: Json<string[]>;
  state: 'pending' | 'running' | 'succeeded';
  step: string | null;
  progress: Json<Record<string, { total: number; deleted: number }>>;
  message: string | null;
  attempts: Generated<number>;
  requested_by: string | null;
  runner: string | null;
  lease_until: NullableTimestamp;
  created_at: DefaultTimestamp;
  started_at: NullableTimestamp;
  finished_at: NullableTimestamp;
}
export type DeletionRow = Selectable<DeletionsTable>;
