import { Type } from '@sinclair/typebox';
import {
  PORT_PATTERN,
  BOOTSTRAP_SERVERS_PATTERN,
  configSchema,
  hostField,
  passwordField,
  pemField,
  portField,
  requiredWhen,
  SSH_DEPENDENCIES,
  sshTunnelFields,
  StringEnum,
  TOPIC_PATTERN,
  userField,
} from './fields.js';
import { secretField } from './secret.js';
import { kafkaSecurityFields, saslRule } from './kafka.js';
import { POSTGRES_SSL_MODES } from './sources.js';

// `json_configuration` of the target types and of the job type (spec 2.13).
// KAFKA_TARGET and ORACLE_TARGET are the spec's lists; the others carry what
// the systems' clients need (see README.md for the references).

export const KafkaTargetConfig = configSchema(
  'KafkaTargetConfig',
  {
    bootstrap_server: Type.String({
      maxLength: 2048,
      pattern: BOOTSTRAP_SERVERS_PATTERN,
      description: 'Comma-separated host:port list of the brokers',
    }),
    ...kafkaSecurityFields(),
    ca_cert: Type.Optional(pemField('PEM CA certificate for SSL')),
    group_id: Type.Optional(Type.String({ minLength: 1, maxLength: 255, description: 'Client group id' })),
  },
  {
    title: 'Kafka target',
    description: 'Produces to Kafka topics (the subscription’s target table name is the topic)',
    allOf: [saslRule()],
  },
);

/** Spec 2.13: all required strings, `port` included. */
export const OracleTargetConfig = configSchema(
  'OracleTargetConfig',
  {
    database: Type.String({ minLength: 1, maxLength: 128, description: 'Database (service) name' }),
    user: userField('Oracle database'),
    password: passwordField('Oracle database'),
    host: hostField('Oracle listener'),
    port: Type.String({
      pattern: `^${PORT_PATTERN}$`,
      description: 'TCP port of the listener, as a string (e.g. "1521")',
    }),
    server_name: Type.String({ minLength: 1, maxLength: 255, description: 'Server name' }),
    server_id: Type.String({ minLength: 1, maxLength: 255, description: 'Server id' }),
    ...sshTunnelFields(),
  },
  {
    title: 'Oracle target',
    description: 'Upserts rows into Oracle tables',
    dependentRequired: SSH_DEPENDENCIES,
  },
);

export const SNOWFLAKE_AUTHENTICATORS = ['SNOWFLAKE', 'SNOWFLAKE_JWT'] as const;

export const SnowflakeTargetConfig = configSchema(
  'SnowflakeTargetConfig',
  {
    account: Type.String({
      minLength: 1,
      maxLength: 255,
      pattern: '^[A-Za-z0-9_.-]+$',
      description: 'Account identifier (orgname-account_name, or the account locator with its region)',
    }),
    user: userField('Snowflake account'),
    authenticator: Type.Optional(
      StringEnum(SNOWFLAKE_AUTHENTICATORS, {
        default: 'SNOWFLAKE',
        description: 'SNOWFLAKE: password; SNOWFLAKE_JWT: key-pair authentication',
      }),
    ),
    password: Type.Optional(secretField('Password of the user; required with the SNOWFLAKE authenticator')),
    private_key: Type.Optional(
      secretField('PEM private key of the user; required with the SNOWFLAKE_JWT authenticator'),
    ),
    private_key_passphrase: Type.Optional(secretField('Passphrase of an encrypted private key')),
    warehouse: Type.String({
      minLength: 1,
      maxLength: 255,
      description: 'Virtual warehouse that runs the loads',
    }),
    database: Type.String({ minLength: 1, maxLength: 255, description: 'Database of the target tables' }),
    schema: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        default: 'PUBLIC',
        description: 'Schema of the target tables',
      }),
    ),
    role: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        description: 'Role of the session; the user’s default when absent',
      }),
    ),
  },
  {
    title: 'Snowflake target',
    description: 'Loads rows into Snowflake tables',
    allOf: [
      requiredWhen('authenticator', ['SNOWFLAKE'], ['password'], true),
      requiredWhen('authenticator', ['SNOWFLAKE_JWT'], ['private_key']),
    ],
  },
);

export const BigqueryTargetConfig = configSchema(
  'BigqueryTargetConfig',
  {
    project_id: Type.String({
      pattern: '^[a-z][a-z0-9-]{4,28}[a-z0-9]$',
      title: 'Project ID',
      description: 'Google Cloud project that owns the dataset',
    }),
    dataset: Type.String({
      pattern: '^[A-Za-z0-9_]{1,1024}$',
      description: 'Dataset of the target tables (letters, digits, underscores)',
    }),
    location: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        description: 'Location of the dataset and jobs (e.g. US, EU, europe-west1)',
      }),
    ),
    service_account_json: secretField('Key file (JSON) of the service account that writes', {
      title: 'Service account JSON',
    }),
  },
  { title: 'BigQuery target', description: 'Writes rows into BigQuery tables' },
);

/**
 * POSTGRES_TARGET and MSSQL_TARGET share their fields (spec 2.13); SQL Server
 * reads `ssl_mode` as: disable → no encryption, require → encrypt and trust
 * the server certificate, verify-ca / verify-full → encrypt and verify it.
 */
const sqlTargetFields = (engine: string, defaultPort: number, defaultSchema: string) => ({
  host: hostField(`${engine} server`),
  port: Type.Optional(portField(defaultPort, `${engine} server`)),
  database: Type.String({ minLength: 1, maxLength: 128, description: 'Database of the target tables' }),
  user: userField(`${engine} server`),
  password: passwordField(`${engine} server`),
  schema: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 128,
      default: defaultSchema,
      description: 'Schema of the target tables',
    }),
  ),
  ssl_mode: Type.Optional(
    StringEnum(POSTGRES_SSL_MODES, {
      default: 'prefer',
      title: 'SSL mode',
      description: 'Encryption of the connection',
    }),
  ),
  ssl_root_cert: Type.Optional(pemField('PEM CA certificate for verify-ca / verify-full')),
  ...sshTunnelFields(),
});

export const PostgresTargetConfig = configSchema(
  'PostgresTargetConfig',
  sqlTargetFields('PostgreSQL', 5432, 'public'),
  {
    title: 'PostgreSQL target',
    description: 'Upserts rows into PostgreSQL tables by primary key',
    dependentRequired: SSH_DEPENDENCIES,
  },
);

export const MssqlTargetConfig = configSchema(
  'MssqlTargetConfig',
  sqlTargetFields('SQL Server', 1433, 'dbo'),
  {
    title: 'SQL Server target',
    description: 'Upserts rows into SQL Server tables by primary key',
    dependentRequired: SSH_DEPENDENCIES,
  },
);

export const ElasticsearchTargetConfig = configSchema(
  'ElasticsearchTargetConfig',
  {
    nodes: Type.Array(Type.String({ format: 'uri', pattern: '^https?://', maxLength: 2048 }), {
      minItems: 1,
      maxItems: 100,
      uniqueItems: true,
      description: 'URLs of the cluster nodes (http:// or https://)',
    }),
    api_key: Type.Optional(
      secretField('API key (the base64 "encoded" value); takes precedence over user/password', {
        title: 'API key',
      }),
    ),
    username: Type.Optional(userField('cluster (basic authentication)')),
    password: Type.Optional(passwordField('cluster (basic authentication)')),
    ca_fingerprint: Type.Optional(
      Type.String({
        pattern: '^([A-Fa-f0-9]{2}:?){31}[A-Fa-f0-9]{2}$',
        title: 'CA fingerprint',
        description: 'SHA-256 fingerprint of the CA certificate that signed the node certificates',
      }),
    ),
    ca_cert: Type.Optional(pemField('PEM CA certificate of the cluster')),
    index_prefix: Type.Optional(
      Type.String({
        pattern: '^[a-z0-9][a-z0-9_.-]{0,200}$',
        description: 'Prefix of the index names (the subscription’s target table name follows it)',
      }),
    ),
  },
  {
    title: 'Elasticsearch target',
    description: 'Indexes rows as documents, the primary key as document id',
    dependentRequired: { username: ['password'], password: ['username'] },
  },
);

export const WEBHOOK_METHODS = ['POST', 'PUT', 'PATCH'] as const;
export const WEBHOOK_AUTH_TYPES = ['none', 'basic', 'bearer', 'header'] as const;

export const WebhookTargetConfig = configSchema(
  'WebhookTargetConfig',
  {
    url: Type.String({
      format: 'uri',
      pattern: '^https?://',
      maxLength: 2048,
      title: 'URL',
      description: 'Endpoint that receives the rows',
    }),
    method: Type.Optional(StringEnum(WEBHOOK_METHODS, { default: 'POST', description: 'HTTP method' })),
    // Header values are secrets: an API key often travels in one.
    headers: Type.Optional(
      Type.Record(
        Type.String({ pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" }),
        secretField('Value of the header', { inline: { minLength: 0, maxLength: 8192 } }),
        {
          maxProperties: 50,
          // A name outside the pattern is refused, not left unchecked (with any value) beside it.
          additionalProperties: false,
          description:
            'Extra request headers; each value is a secret (inline, read back as "<redacted>", or a valueFrom reference)',
        },
      ),
    ),
    auth_type: Type.Optional(
      StringEnum(WEBHOOK_AUTH_TYPES, { default: 'none', description: 'How the request authenticates' }),
    ),
    auth_username: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'User for basic authentication' }),
    ),
    auth_password: Type.Optional(secretField('Password for basic authentication')),
    bearer_token: Type.Optional(secretField('Token sent as "Authorization: Bearer …"')),
    auth_header_name: Type.Optional(
      Type.String({
        pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$",
        default: 'X-API-Key',
        description: 'Header carrying the key with the header auth type',
      }),
    ),
    auth_header_value: Type.Optional(secretField('Value of the authentication header')),
    signing_secret: Type.Optional(
      secretField('When set, each request carries X-Sluice-Signature: sha256=<HMAC-SHA256 of the body>'),
    ),
    batch_size: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1000,
        default: 1,
        description: 'Rows per request; above 1 the body is a JSON array',
      }),
    ),
    batch_interval_ms: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 60000,
        default: 1000,
        description: 'Longest wait to fill a batch',
      }),
    ),
    timeout_ms: Type.Optional(
      Type.Integer({ minimum: 100, maximum: 120000, default: 10000, description: 'Request timeout' }),
    ),
    max_retries: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 100,
        default: 5,
        description: 'Retries of a failed request (network error, 408, 429, 5xx) before the connector errors',
      }),
    ),
    retry_backoff_ms: Type.Optional(
      Type.Integer({
        minimum: 10,
        maximum: 600000,
        default: 1000,
        description: 'First retry delay, doubled each retry',
      }),
    ),
  },
  {
    title: 'Webhook target',
    description: 'Sends rows as JSON to an HTTP endpoint',
    allOf: [
      requiredWhen('auth_type', ['basic'], ['auth_username', 'auth_password']),
      requiredWhen('auth_type', ['bearer'], ['bearer_token']),
      requiredWhen('auth_type', ['header'], ['auth_header_value']),
    ],
  },
);

/**
 * JOB_SMT (spec 2.6: a job type): a single message transform between two
 * topics of the environment's broker; the mapper rules come from the
 * subscription, so their secrets stay where spec 2.9 puts them.
 */
export const SmtJobConfig = configSchema(
  'SmtJobConfig',
  {
    input_topic: Type.String({ pattern: TOPIC_PATTERN, description: 'Topic the job reads' }),
    output_topic: Type.String({
      pattern: TOPIC_PATTERN,
      description: 'Topic the transformed messages go to',
    }),
    consumer_group_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'Consumer group; generated when absent' }),
    ),
  },
  { title: 'Single message transform', description: 'Applies a mapper to each message of a topic' },
);
