import { Type } from '@sinclair/typebox';
import {
  PORT_PATTERN,
  BOOTSTRAP_SERVERS_PATTERN,
  configSchema,
  hostField,
  passwordField,
  pemField,
  portField,
  SSH_DEPENDENCIES,
  sshTunnelFields,
  StringEnum,
  TOPIC_PATTERN,
  userField,
  whitelistField,
} from './fields.js';
import { kafkaSecurityFields, saslRule } from './kafka.js';

// `json_configuration` of the source types (spec 2.13). KAFKA_SOURCE is the
// spec's table; the database sources carry what their engines' clients and
// Debezium connectors need (see README.md for the references).

export const KafkaSourceConfig = configSchema(
  'KafkaSourceConfig',
  {
    topic: Type.String({ pattern: TOPIC_PATTERN, description: 'Topic to consume' }),
    bootstrap_servers: Type.String({
      maxLength: 2048,
      pattern: BOOTSTRAP_SERVERS_PATTERN,
      description: 'Comma-separated host:port list of the brokers',
    }),
    consumer_group_id: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'Consumer group; generated when absent' }),
    ),
    ...kafkaSecurityFields(),
    include_metadata: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'Add topic, partition, offset and timestamp to each message',
      }),
    ),
  },
  { title: 'Kafka source', description: 'Consumes one topic of a Kafka broker', allOf: [saslRule()] },
);

/** libpq's `sslmode` values (also Debezium's `database.sslmode`). */
export const POSTGRES_SSL_MODES = [
  'disable',
  'allow',
  'prefer',
  'require',
  'verify-ca',
  'verify-full',
] as const;

export const PostgresSourceConfig = configSchema(
  'PostgresSourceConfig',
  {
    host: hostField('PostgreSQL server'),
    port: Type.Optional(portField(5432, 'PostgreSQL server')),
    database: Type.String({ minLength: 1, maxLength: 63, description: 'Database to capture changes from' }),
    user: userField('PostgreSQL server (needs the REPLICATION attribute)'),
    password: passwordField('PostgreSQL server'),
    ssl_mode: Type.Optional(
      StringEnum(POSTGRES_SSL_MODES, { default: 'prefer', title: 'SSL mode', description: 'libpq sslmode' }),
    ),
    ssl_root_cert: Type.Optional(pemField('PEM CA certificate for verify-ca / verify-full')),
    plugin_name: Type.Optional(
      StringEnum(['pgoutput', 'decoderbufs'] as const, {
        default: 'pgoutput',
        description: 'Logical decoding plug-in on the server',
      }),
    ),
    slot_name: Type.Optional(
      Type.String({
        pattern: '^[a-z0-9_]{1,63}$',
        description: 'Replication slot (lower-case letters, digits, underscores); generated when absent',
      }),
    ),
    publication_name: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 63,
        description: 'Publication used with pgoutput; generated when absent',
      }),
    ),
    whitelist: whitelistField('schema.table', 'public.orders'),
    ...sshTunnelFields(),
  },
  {
    title: 'PostgreSQL source',
    description: 'Change data capture from PostgreSQL logical replication',
    dependentRequired: SSH_DEPENDENCIES,
  },
);

/** MySQL client `ssl-mode` values, spelled as Debezium's `database.ssl.mode`. */
export const MYSQL_SSL_MODES = ['disabled', 'preferred', 'required', 'verify_ca', 'verify_identity'] as const;

const mysqlFields = (engine: string) => ({
  host: hostField(`${engine} server`),
  port: Type.Optional(portField(3306, `${engine} server`)),
  user: userField(`${engine} server (needs REPLICATION SLAVE and REPLICATION CLIENT)`),
  password: passwordField(`${engine} server`),
  database: Type.Optional(
    Type.String({ minLength: 1, maxLength: 64, description: 'Default database of the connection' }),
  ),
  server_id: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: 4294967295,
      description: 'Replication client id, unique among the replicas of the server; generated when absent',
    }),
  ),
  ssl_mode: Type.Optional(
    StringEnum(MYSQL_SSL_MODES, {
      default: 'preferred',
      title: 'SSL mode',
      description: 'Encryption of the connection',
    }),
  ),
  ssl_ca: Type.Optional(pemField('PEM CA certificate for verify_ca / verify_identity')),
  whitelist: whitelistField('database.table', 'shop.orders'),
  ...sshTunnelFields(),
});

export const MysqlSourceConfig = configSchema('MysqlSourceConfig', mysqlFields('MySQL'), {
  title: 'MySQL source',
  description: 'Change data capture from the MySQL binary log (row format)',
  dependentRequired: SSH_DEPENDENCIES,
});

/** Spec 2.13: the same fields as MYSQL_SOURCE. */
export const MariadbSourceConfig = configSchema('MariadbSourceConfig', mysqlFields('MariaDB'), {
  title: 'MariaDB source',
  description: 'Change data capture from the MariaDB binary log (row format)',
  dependentRequired: SSH_DEPENDENCIES,
});

const mssqlSourceFields = () => ({
  host: hostField('SQL Server'),
  port: Type.Optional(portField(1433, 'SQL Server')),
  database: Type.String({ minLength: 1, maxLength: 128, description: 'Database to capture changes from' }),
  instance: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 128,
      description: 'Named instance; the port is ignored when set',
    }),
  ),
  user: userField('SQL Server'),
  password: passwordField('SQL Server'),
  encrypt: Type.Optional(Type.Boolean({ default: true, description: 'Encrypt the connection (TLS)' })),
  trust_server_certificate: Type.Optional(
    Type.Boolean({ default: false, description: 'Accept the server certificate without verifying it' }),
  ),
  whitelist: whitelistField('schema.table', 'dbo.orders'),
  ...sshTunnelFields(),
});

export const MssqlSourceConfig = configSchema('MssqlSourceConfig', mssqlSourceFields(), {
  title: 'SQL Server source',
  description: 'Change data capture from SQL Server change tables',
  dependentRequired: SSH_DEPENDENCIES,
});

export const MssqlLogSourceConfig = configSchema('MssqlLogSourceConfig', mssqlSourceFields(), {
  title: 'SQL Server log source',
  description: 'Change data capture from the SQL Server transaction log, without change tables',
  dependentRequired: SSH_DEPENDENCIES,
});

/** Debezium's `log.mining.strategy` values. */
export const ORACLE_LOG_MINING_STRATEGIES = ['online_catalog', 'redo_log_catalog', 'hybrid'] as const;

export const OracleSourceConfig = configSchema(
  'OracleSourceConfig',
  {
    host: hostField('Oracle listener'),
    port: Type.Optional(portField(1521, 'Oracle listener')),
    database: Type.String({
      minLength: 1,
      maxLength: 128,
      description: 'Service name (or SID) of the database; the CDB root for a multitenant database',
    }),
    pdb_name: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 128,
        description: 'Pluggable database to capture, in a multitenant CDB',
      }),
    ),
    user: userField('Oracle database (the LogMiner user)'),
    password: passwordField('Oracle database'),
    log_mining_strategy: Type.Optional(
      StringEnum(ORACLE_LOG_MINING_STRATEGIES, {
        default: 'online_catalog',
        description: 'Where LogMiner reads the data dictionary from',
      }),
    ),
    whitelist: whitelistField('SCHEMA.TABLE', 'SALES.ORDERS'),
    ...sshTunnelFields(),
  },
  {
    title: 'Oracle source',
    description: 'Change data capture from the Oracle redo log through LogMiner',
    dependentRequired: SSH_DEPENDENCIES,
  },
);

export const IbmiSourceConfig = configSchema(
  'IbmiSourceConfig',
  {
    host: hostField('IBM i system'),
    port: Type.Optional(portField(8471, 'IBM i database host server (9471 with TLS)')),
    database: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 18,
        description: 'Relational database name; the system default when absent',
      }),
    ),
    user: userField('IBM i system (needs *USE on the journals and receivers)'),
    password: passwordField('IBM i system'),
    secure: Type.Optional(Type.Boolean({ default: false, description: 'Connect over TLS' })),
    whitelist: whitelistField('LIBRARY.FILE', 'SALESLIB.ORDERS'),
    ...sshTunnelFields(),
  },
  {
    title: 'IBM i source',
    description: 'Change data capture from Db2 for IBM i journals',
    dependentRequired: SSH_DEPENDENCIES,
  },
);

export const MongoSourceConfig = configSchema(
  'MongoSourceConfig',
  {
    hosts: Type.String({
      minLength: 1,
      maxLength: 2048,
      pattern: `^[A-Za-z0-9._\\-\\[\\]:]+(:${PORT_PATTERN})?(,[A-Za-z0-9._\\-\\[\\]:]+(:${PORT_PATTERN})?)*$`,
      description:
        'Comma-separated host[:port] list of replica set members (port 27017 when absent), or the SRV host',
    }),
    srv: Type.Optional(
      Type.Boolean({ default: false, description: 'Resolve the host through DNS SRV (mongodb+srv)' }),
    ),
    replica_set: Type.Optional(
      Type.String({ minLength: 1, maxLength: 255, description: 'Replica set name; discovered when absent' }),
    ),
    user: Type.Optional(userField('MongoDB deployment')),
    password: Type.Optional(passwordField('MongoDB deployment')),
    auth_source: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 64,
        default: 'admin',
        description: 'Database holding the user',
      }),
    ),
    tls: Type.Optional(Type.Boolean({ default: false, description: 'Connect over TLS' })),
    whitelist: whitelistField('database.collection', 'shop.orders', 'Collections'),
  },
  {
    title: 'MongoDB source',
    description: 'Change data capture from MongoDB change streams (replica set or sharded cluster)',
    dependentRequired: { user: ['password'], password: ['user'] },
  },
);
