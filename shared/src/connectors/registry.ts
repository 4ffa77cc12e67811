import type { TObject } from '@sinclair/typebox';
import {
  IbmiSourceConfig,
  KafkaSourceConfig,
  MariadbSourceConfig,
  MongoSourceConfig,
  MssqlLogSourceConfig,
  MssqlSourceConfig,
  MysqlSourceConfig,
  OracleSourceConfig,
  PostgresSourceConfig,
} from './sources.js';
import {
  BigqueryTargetConfig,
  ElasticsearchTargetConfig,
  KafkaTargetConfig,
  MssqlTargetConfig,
  OracleTargetConfig,
  PostgresTargetConfig,
  SmtJobConfig,
  SnowflakeTargetConfig,
  WebhookTargetConfig,
} from './targets.js';

/** Every connector type of spec 2.13, sources first, then targets, then the job type. */
export const CONNECTOR_TYPE_IDS = [
  'KAFKA_SOURCE',
  'POSTGRES_SOURCE',
  'MYSQL_SOURCE',
  'MARIADB_SOURCE',
  'MSSQL_SOURCE',
  'MSSQL_LOG_SOURCE',
  'ORACLE_SOURCE',
  'IBMI_SOURCE',
  'MONGO_SOURCE',
  'KAFKA_TARGET',
  'ORACLE_TARGET',
  'SNOWFLAKE_TARGET',
  'BIGQUERY_TARGET',
  'POSTGRES_TARGET',
  'MSSQL_TARGET',
  'ELASTICSEARCH_TARGET',
  'WEBHOOK_TARGET',
  'JOB_SMT',
] as const;
export type ConnectorTypeId = (typeof CONNECTOR_TYPE_IDS)[number];

export type ConnectorDirection = 'source' | 'target' | 'job';
/** Spec 2.7: which key of `json_configuration` holds the capture list. */
export type TopicsConfigKey = 'whitelist' | 'topic' | null;

export const PREFLIGHT_ACTIONS = [
  'check-credentials',
  'fetch-messages',
  'list-topics',
  'list-tables',
  'list-collections',
  'fetch-schema',
  'warehouses',
] as const;
export type PreflightAction = (typeof PREFLIGHT_ACTIONS)[number];

export interface ConnectorTypeDef {
  type: ConnectorTypeId;
  direction: ConnectorDirection;
  title: string;
  description: string;
  /** A change-data-capture source: its capture list may never be empty (spec 4.5 rule 5). */
  cdc: boolean;
  topics_config_key: TopicsConfigKey;
  /** URL segment of the pre-flight calls (spec 4.5): `postgres-source`. */
  segment: string;
  /** Pre-flight actions of spec 4.5 for this type. */
  preflight: readonly PreflightAction[];
  /** JSON Schema of `json_configuration`. */
  schema: TObject;
}

const DB_SOURCE_ACTIONS = ['check-credentials', 'list-tables', 'fetch-schema'] as const;
const CHECK = ['check-credentials'] as const;

const def = (
  type: ConnectorTypeId,
  direction: ConnectorDirection,
  schema: TObject,
  extra: { cdc?: boolean; topics_config_key?: TopicsConfigKey; preflight?: readonly PreflightAction[] } = {},
): ConnectorTypeDef => ({
  type,
  direction,
  title: String(schema.title),
  description: String(schema.description),
  cdc: extra.cdc ?? false,
  topics_config_key: extra.topics_config_key ?? null,
  segment: type.toLowerCase().replace(/_/g, '-'),
  preflight: extra.preflight ?? [],
  schema,
});
const cdcSource = (
  type: ConnectorTypeId,
  schema: TObject,
  preflight: readonly PreflightAction[] = DB_SOURCE_ACTIONS,
) => def(type, 'source', schema, { cdc: true, topics_config_key: 'whitelist', preflight });

export const CONNECTOR_TYPES: readonly ConnectorTypeDef[] = Object.freeze([
  def('KAFKA_SOURCE', 'source', KafkaSourceConfig, {
    topics_config_key: 'topic',
    preflight: ['check-credentials', 'fetch-messages', 'list-topics'],
  }),
  cdcSource('POSTGRES_SOURCE', PostgresSourceConfig),
  cdcSource('MYSQL_SOURCE', MysqlSourceConfig),
  cdcSource('MARIADB_SOURCE', MariadbSourceConfig),
  cdcSource('MSSQL_SOURCE', MssqlSourceConfig),
  cdcSource('MSSQL_LOG_SOURCE', MssqlLogSourceConfig),
  cdcSource('ORACLE_SOURCE', OracleSourceConfig),
  cdcSource('IBMI_SOURCE', IbmiSourceConfig),
  cdcSource('MONGO_SOURCE', MongoSourceConfig, ['check-credentials', 'list-collections', 'fetch-schema']),
  def('KAFKA_TARGET', 'target', KafkaTargetConfig),
  def('ORACLE_TARGET', 'target', OracleTargetConfig, { preflight: CHECK }),
  def('SNOWFLAKE_TARGET', 'target', SnowflakeTargetConfig, {
    preflight: ['check-credentials', 'warehouses'],
  }),
  def('BIGQUERY_TARGET', 'target', BigqueryTargetConfig, { preflight: CHECK }),
  def('POSTGRES_TARGET', 'target', PostgresTargetConfig, { preflight: CHECK }),
  def('MSSQL_TARGET', 'target', MssqlTargetConfig, { preflight: CHECK }),
  def('ELASTICSEARCH_TARGET', 'target', ElasticsearchTargetConfig, { preflight: CHECK }),
  def('WEBHOOK_TARGET', 'target', WebhookTargetConfig, { preflight: CHECK }),
  def('JOB_SMT', 'job', SmtJobConfig),
]);

const byId = new Map<string, ConnectorTypeDef>(CONNECTOR_TYPES.map((t) => [t.type, t]));
const bySegment = new Map<string, ConnectorTypeDef>(CONNECTOR_TYPES.map((t) => [t.segment, t]));

export function isConnectorTypeId(type: string): type is ConnectorTypeId {
  return byId.has(type);
}

/** The registered type, or undefined for an unknown identifier. */
export function connectorType(type: string): ConnectorTypeDef | undefined {
  return byId.get(type);
}

/** The type of a pre-flight URL segment (`kafka-source` → KAFKA_SOURCE). */
export function connectorTypeBySegment(segment: string): ConnectorTypeDef | undefined {
  return bySegment.get(segment);
}

export class UnknownConnectorTypeError extends Error {
  override readonly name = 'UnknownConnectorTypeError';
  constructor(readonly type: string) {
    super(`Unknown connector type '${type}'; known: ${CONNECTOR_TYPE_IDS.join(', ')}`);
  }
}

/** The registered type; throws `UnknownConnectorTypeError` for an unknown one. */
export function requireConnectorType(type: string): ConnectorTypeDef {
  const def = byId.get(type);
  if (!def) throw new UnknownConnectorTypeError(type);
  return def;
}
