import type { ConnectorTypeId } from '../connectors/registry.js';

/**
 * Targets that write database tables and upsert by primary key: a mapping
 * delivered to them needs a primary-key rule (mapper rule 13). Brokers,
 * webhooks and Elasticsearch take documents.
 */
export const TABLE_TARGETS: readonly ConnectorTypeId[] = [
  'POSTGRES_TARGET',
  'MSSQL_TARGET',
  'ORACLE_TARGET',
  'SNOWFLAKE_TARGET',
  'BIGQUERY_TARGET',
];

export const writesTables = (type: string): boolean => (TABLE_TARGETS as readonly string[]).includes(type);
