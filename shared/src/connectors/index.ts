// Connector types (spec 2.13, 2.14): the registry, the configuration schemas,
// their validation, secrets and form fields.
export {
  CONNECTOR_TYPE_IDS,
  CONNECTOR_TYPES,
  connectorType,
  connectorTypeBySegment,
  isConnectorTypeId,
  PREFLIGHT_ACTIONS,
  requireConnectorType,
  UnknownConnectorTypeError,
  type ConnectorDirection,
  type ConnectorTypeDef,
  type ConnectorTypeId,
  type PreflightAction,
  type TopicsConfigKey,
} from './registry.js';
export {
  isSecretRef,
  isSecretMapSchema,
  isSecretSchema,
  SECRET_KEYWORD,
  SecretKeySelector,
  SecretRef,
  secretField,
  type SecretFieldOptions,
  type SecretValue,
} from './secret.js';
export {
  compileConnectorSchema,
  secretPaths,
  validateConnectorConfig,
  withConnectorDefaults,
  type ConnectorConfigIssue,
} from './validate.js';
export { changedDestination, destinationFields, WAREHOUSE_DESTINATION_FIELDS } from './destination.js';
export {
  ConnectorTypeList,
  ConnectorTypeRead,
  connectorTypeRead,
  FORM_FIELD_TYPES,
  FormField,
  FormFieldCondition,
  formFields,
} from './form.js';
export {
  IbmiSourceConfig,
  KafkaSourceConfig,
  MariadbSourceConfig,
  MongoSourceConfig,
  MssqlLogSourceConfig,
  MssqlSourceConfig,
  MYSQL_SSL_MODES,
  MysqlSourceConfig,
  ORACLE_LOG_MINING_STRATEGIES,
  OracleSourceConfig,
  POSTGRES_SSL_MODES,
  PostgresSourceConfig,
} from './sources.js';
export {
  BigqueryTargetConfig,
  ElasticsearchTargetConfig,
  KafkaTargetConfig,
  MssqlTargetConfig,
  OracleTargetConfig,
  PostgresTargetConfig,
  SmtJobConfig,
  SNOWFLAKE_AUTHENTICATORS,
  SnowflakeTargetConfig,
  WEBHOOK_AUTH_TYPES,
  WEBHOOK_METHODS,
  WebhookTargetConfig,
} from './targets.js';
export { cdcNames } from './postgres-cdc-names.js';
