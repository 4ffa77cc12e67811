import { describe, expect, it } from '@jest/globals';
import {
  CONNECTOR_TYPE_IDS,
  isSecretRef,
  secretPaths,
  UnknownConnectorTypeError,
  validateConnectorConfig,
  withConnectorDefaults,
  type ConnectorTypeId,
} from './index.js';

const sshKey = Buffer.from(
  '-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n',
).toString('base64');

/** One valid configuration per type, with only the required fields where that is enough. */
const SAMPLES: Record<ConnectorTypeId, Record<string, unknown>> = {
  KAFKA_SOURCE: { topic: 'orders', bootstrap_servers: 'kafka-1:9092,kafka-2:9092' },
  POSTGRES_SOURCE: {
    host: 'db.internal',
    database: 'shop',
    user: 'cdc',
    password: 'pg-pass',
    whitelist: ['public.orders', 'public.customers'],
    ssh_host: 'bastion.example.com',
    ssh_user: 'tunnel',
    ssh_private_key: sshKey,
  },
  MYSQL_SOURCE: {
    host: 'mysql',
    user: 'cdc',
    password: 'p',
    whitelist: ['shop.orders'],
    ssl_mode: 'verify_identity',
  },
  MARIADB_SOURCE: {
    host: 'mariadb',
    user: 'cdc',
    password: 'p',
    whitelist: ['shop.orders'],
    server_id: 184054,
  },
  MSSQL_SOURCE: { host: 'sql', database: 'Shop', user: 'sa', password: 'p', whitelist: ['dbo.Orders'] },
  MSSQL_LOG_SOURCE: {
    host: 'sql',
    database: 'Shop',
    user: 'sa',
    password: 'p',
    whitelist: ['dbo.Orders'],
    encrypt: false,
  },
  ORACLE_SOURCE: {
    host: 'ora',
    database: 'ORCLCDB',
    pdb_name: 'ORCLPDB1',
    user: 'c##dbzuser',
    password: 'p',
    whitelist: ['SALES.ORDERS'],
  },
  IBMI_SOURCE: {
    host: 'as400',
    user: 'CDCUSER',
    password: 'p',
    whitelist: ['SALESLIB.ORDERS'],
    secure: true,
    port: 9471,
  },
  MONGO_SOURCE: {
    hosts: 'mongo-1:27017,mongo-2',
    replica_set: 'rs0',
    user: 'cdc',
    password: 'p',
    whitelist: ['shop.orders'],
  },
  KAFKA_TARGET: { bootstrap_server: 'kafka:9092' },
  ORACLE_TARGET: {
    database: 'ORCL',
    user: 'loader',
    password: 'p',
    host: 'ora',
    port: '1521',
    server_name: 'ora-1',
    server_id: '1',
  },
  SNOWFLAKE_TARGET: {
    account: 'myorg-myaccount',
    user: 'LOADER',
    password: 'p',
    warehouse: 'LOAD_WH',
    database: 'ANALYTICS',
  },
  BIGQUERY_TARGET: {
    project_id: 'my-project-1',
    dataset: 'analytics',
    service_account_json: '{"type":"service_account"}',
  },
  POSTGRES_TARGET: { host: 'pg', database: 'dwh', user: 'loader', password: 'p' },
  MSSQL_TARGET: { host: 'sql', database: 'Dwh', user: 'loader', password: 'p', ssl_mode: 'require' },
  ELASTICSEARCH_TARGET: {
    nodes: ['https://es-1:9200', 'https://es-2:9200'],
    username: 'elastic',
    password: 'p',
  },
  WEBHOOK_TARGET: {
    url: 'https://hooks.example.com/sluice',
    auth_type: 'bearer',
    bearer_token: 't0ken',
    batch_size: 100,
  },
  JOB_SMT: { input_topic: 'raw.orders', output_topic: 'clean.orders' },
};

const ref = (name = 'db-credentials', key = 'password') => ({ valueFrom: { secretKeyRef: { name, key } } });
const locs = (type: string, config: unknown) => validateConnectorConfig(type, config).map((i) => i.loc);

describe('validateConnectorConfig', () => {
  it.each(CONNECTOR_TYPE_IDS)('%s: the sample configuration passes', (type) => {
    expect(validateConnectorConfig(type, SAMPLES[type])).toEqual([]);
  });

  it.each(CONNECTOR_TYPE_IDS)('%s: each required field, when missing, is reported at its loc', (type) => {
    expect(validateConnectorConfig(type, {}).filter((i) => i.type === 'missing').length).toBeGreaterThan(0);
    for (const [field] of Object.entries(SAMPLES[type])) {
      const { [field]: _gone, ...rest } = SAMPLES[type];
      const issues = validateConnectorConfig(type, rest);
      for (const i of issues) expect(i.type).toBe('missing');
    }
  });

  it('reports missing required fields with their loc and pydantic-style type', () => {
    expect(validateConnectorConfig('POSTGRES_SOURCE', { host: 'db' })).toEqual(
      expect.arrayContaining([
        { loc: ['database'], msg: 'Field required', type: 'missing' },
        { loc: ['user'], msg: 'Field required', type: 'missing' },
        { loc: ['password'], msg: 'Field required', type: 'missing' },
        { loc: ['whitelist'], msg: 'Field required', type: 'missing' },
      ]),
    );
    expect(locs('ORACLE_TARGET', { ...SAMPLES.ORACLE_TARGET, server_id: undefined })).toEqual([
      ['server_id'],
    ]);
  });

  it('refuses a value outside an enum', () => {
    const issues = validateConnectorConfig('POSTGRES_SOURCE', { ...SAMPLES.POSTGRES_SOURCE, ssl_mode: 'on' });
    expect(issues).toEqual([
      {
        loc: ['ssl_mode'],
        msg: 'Input should be one of: "disable", "allow", "prefer", "require", "verify-ca", "verify-full"',
        type: 'enum',
      },
    ]);
    expect(locs('KAFKA_SOURCE', { ...SAMPLES.KAFKA_SOURCE, security_protocol: 'TLS' })).toEqual([
      ['security_protocol'],
    ]);
    expect(locs('MYSQL_SOURCE', { ...SAMPLES.MYSQL_SOURCE, ssl_mode: 'verify-full' })).toEqual([
      ['ssl_mode'],
    ]);
  });

  it('refuses a bad port', () => {
    const bad = (port: unknown) =>
      validateConnectorConfig('POSTGRES_SOURCE', { ...SAMPLES.POSTGRES_SOURCE, port });
    expect(bad(0)).toEqual([
      { loc: ['port'], msg: 'Input should be greater than or equal to 1', type: 'greater_than_equal' },
    ]);
    expect(bad(70000)).toEqual([
      { loc: ['port'], msg: 'Input should be less than or equal to 65535', type: 'less_than_equal' },
    ]);
    expect(bad('5432')).toEqual([
      { loc: ['port'], msg: 'Input should be of type integer', type: 'integer_type' },
    ]);
    expect(bad(54.5)).toEqual([
      { loc: ['port'], msg: 'Input should be of type integer', type: 'integer_type' },
    ]);
    // ORACLE_TARGET's port is a string (spec 2.13).
    expect(locs('ORACLE_TARGET', { ...SAMPLES.ORACLE_TARGET, port: 1521 })).toEqual([['port']]);
    expect(locs('ORACLE_TARGET', { ...SAMPLES.ORACLE_TARGET, port: 'abc' })).toEqual([['port']]);
    expect(locs('POSTGRES_SOURCE', { ...SAMPLES.POSTGRES_SOURCE, ssh_port: 0 })).toEqual([['ssh_port']]);
  });

  it.each(['KAFKA_SOURCE', 'KAFKA_TARGET'] as const)('%s: SASL needs a user and a password', (type) => {
    const sasl = { ...SAMPLES[type], security_protocol: 'SASL_SSL', sasl_mechanism: 'SCRAM-SHA-512' };
    expect(validateConnectorConfig(type, { ...sasl, sasl_username: 'svc' })).toEqual([
      {
        loc: ['sasl_password'],
        msg: 'Field required when \'security_protocol\' is "SASL_SSL"',
        type: 'missing',
      },
    ]);
    expect(locs(type, { ...sasl, security_protocol: 'SASL_PLAINTEXT' })).toEqual([
      ['sasl_username'],
      ['sasl_password'],
    ]);
    expect(validateConnectorConfig(type, { ...sasl, sasl_username: 'svc', sasl_password: 'pw' })).toEqual([]);
    expect(
      validateConnectorConfig(type, { ...sasl, sasl_username: 'svc', sasl_password: ref('kafka', 'pw') }),
    ).toEqual([]);
    expect(validateConnectorConfig(type, { ...SAMPLES[type], security_protocol: 'SSL' })).toEqual([]);
  });

  it('applies the other conditional rules', () => {
    // Snowflake: password by default, private key with key-pair authentication.
    const { password: _p, ...sf } = SAMPLES.SNOWFLAKE_TARGET;
    expect(validateConnectorConfig('SNOWFLAKE_TARGET', sf)).toEqual([
      {
        loc: ['password'],
        msg: 'Field required when \'authenticator\' is "SNOWFLAKE" (the default)',
        type: 'missing',
      },
    ]);
    expect(locs('SNOWFLAKE_TARGET', { ...sf, authenticator: 'SNOWFLAKE_JWT' })).toEqual([['private_key']]);
    expect(
      locs('SNOWFLAKE_TARGET', { ...sf, authenticator: 'SNOWFLAKE_JWT', private_key: ref('sf', 'key.pem') }),
    ).toEqual([]);
    // An SSH bastion needs its user and key.
    const { ssh_user: _u, ssh_private_key: _k, ...pg } = SAMPLES.POSTGRES_SOURCE;
    expect(validateConnectorConfig('POSTGRES_SOURCE', pg)).toEqual([
      { loc: ['ssh_user'], msg: "Field required when 'ssh_host' is set", type: 'missing' },
      { loc: ['ssh_private_key'], msg: "Field required when 'ssh_host' is set", type: 'missing' },
    ]);
    expect(locs('POSTGRES_SOURCE', { ...SAMPLES.POSTGRES_SOURCE, ssh_private_key: 'not base64!' })).toEqual([
      ['ssh_private_key'],
    ]);
    // `<redacted>` stands for the stored key (a pre-flight check with ?connector_id=, a PATCH).
    expect(locs('POSTGRES_SOURCE', { ...SAMPLES.POSTGRES_SOURCE, ssh_private_key: '<redacted>' })).toEqual(
      [],
    );
    // The bastion's host key: a public key line (after a host name too, as ssh-keyscan prints it) or a fingerprint.
    const ed25519 = 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl';
    for (const hostKey of [
      ed25519,
      `${ed25519} root@bastion`,
      `bastion.example.com ${ed25519}`,
      'SHA256:uNiVztksCsDhcc0u9e8BujQXVUpKZIDTMczCvj3tD2s',
    ]) {
      expect(locs('POSTGRES_SOURCE', { ...SAMPLES.POSTGRES_SOURCE, ssh_host_key: hostKey })).toEqual([]);
    }
    for (const hostKey of ['SHA256:short', 'MD5:aa:bb', 'ssh-ed25519', 'not a key']) {
      expect(locs('POSTGRES_SOURCE', { ...SAMPLES.POSTGRES_SOURCE, ssh_host_key: hostKey })).toEqual([
        ['ssh_host_key'],
      ]);
    }
    // Webhook authentication.
    expect(locs('WEBHOOK_TARGET', { url: 'https://x.example', auth_type: 'basic' })).toEqual([
      ['auth_username'],
      ['auth_password'],
    ]);
    expect(locs('WEBHOOK_TARGET', { url: 'ftp://x.example' })).toEqual([['url']]);
    expect(locs('MONGO_SOURCE', { ...SAMPLES.MONGO_SOURCE, password: undefined })).toEqual([['password']]);
    expect(locs('ELASTICSEARCH_TARGET', { nodes: ['https://es:9200'], username: 'elastic' })).toEqual([
      ['password'],
    ]);
  });

  it('refuses an empty, duplicated or unqualified capture list of a CDC source (spec 4.5 rule 5)', () => {
    const pg = SAMPLES.POSTGRES_SOURCE;
    expect(validateConnectorConfig('POSTGRES_SOURCE', { ...pg, whitelist: [] })).toEqual([
      { loc: ['whitelist'], msg: 'Must NOT have fewer than 1 items', type: 'too_short' },
    ]);
    expect(locs('POSTGRES_SOURCE', { ...pg, whitelist: ['public.a', 'public.a'] })).toEqual([['whitelist']]);
    expect(locs('POSTGRES_SOURCE', { ...pg, whitelist: ['public.a', 'orders'] })).toEqual([['whitelist', 1]]);
    expect(locs('KAFKA_SOURCE', { ...SAMPLES.KAFKA_SOURCE, topic: 'bad topic' })).toEqual([['topic']]);
  });

  it('refuses unknown fields and non-objects', () => {
    expect(validateConnectorConfig('POSTGRES_TARGET', { ...SAMPLES.POSTGRES_TARGET, pasword: 'x' })).toEqual([
      { loc: ['pasword'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' },
    ]);
    expect(validateConnectorConfig('POSTGRES_TARGET', [])).toEqual([
      { loc: [], msg: 'Input should be of type object', type: 'object_type' },
    ]);
  });

  it('throws for an unknown type', () => {
    expect(() => validateConnectorConfig('NOPE', {})).toThrow(UnknownConnectorTypeError);
  });
});

describe('secret fields', () => {
  /** The tunnel's: the key and its passphrase. */
  const SSH_SECRETS = ['ssh_private_key', 'ssh_private_key_passphrase'];
  const expectedSecrets: Record<ConnectorTypeId, string[]> = {
    KAFKA_SOURCE: ['sasl_password'],
    POSTGRES_SOURCE: ['password', ...SSH_SECRETS],
    MYSQL_SOURCE: ['password', ...SSH_SECRETS],
    MARIADB_SOURCE: ['password', ...SSH_SECRETS],
    MSSQL_SOURCE: ['password', ...SSH_SECRETS],
    MSSQL_LOG_SOURCE: ['password', ...SSH_SECRETS],
    ORACLE_SOURCE: ['password', ...SSH_SECRETS],
    IBMI_SOURCE: ['password', ...SSH_SECRETS],
    MONGO_SOURCE: ['password'],
    KAFKA_TARGET: ['sasl_password'],
    ORACLE_TARGET: ['password', ...SSH_SECRETS],
    SNOWFLAKE_TARGET: ['password', 'private_key', 'private_key_passphrase'],
    BIGQUERY_TARGET: ['service_account_json'],
    POSTGRES_TARGET: ['password', ...SSH_SECRETS],
    MSSQL_TARGET: ['password', ...SSH_SECRETS],
    ELASTICSEARCH_TARGET: ['api_key', 'password'],
    WEBHOOK_TARGET: ['headers.*', 'auth_password', 'bearer_token', 'auth_header_value', 'signing_secret'],
    JOB_SMT: [],
  };

  it.each(CONNECTOR_TYPE_IDS)('%s: lists its secret fields', (type) => {
    expect(secretPaths(type)).toEqual(expectedSecrets[type]);
  });

  it.each(CONNECTOR_TYPE_IDS)('%s: every secret field takes an inline value or a reference', (type) => {
    // A secret map (`headers.*`) holds secrets as its values.
    const at = (field: string, value: unknown) =>
      field.endsWith('.*') ? { [field.slice(0, -2)]: { 'X-Key': value } } : { [field]: value };
    for (const field of secretPaths(type)) {
      const inline = field === 'ssh_private_key' ? sshKey : 'inline-value';
      expect([field, validateConnectorConfig(type, { ...SAMPLES[type], ...at(field, inline) })]).toEqual([
        field,
        [],
      ]);
      const withRef = { ...SAMPLES[type], ...at(field, ref('my-secret', 'value.txt')) };
      expect([field, validateConnectorConfig(type, withRef)]).toEqual([field, []]);
    }
  });

  it.each(CONNECTOR_TYPE_IDS)('%s: a reference in a non-secret string field is refused', (type) => {
    const secrets = new Set(secretPaths(type));
    for (const [field, value] of Object.entries(SAMPLES[type])) {
      if (secrets.has(field) || typeof value !== 'string') continue;
      const issues = validateConnectorConfig(type, { ...SAMPLES[type], [field]: ref() });
      expect(issues).toContainEqual({
        loc: [field],
        msg: 'Input should be of type string',
        type: 'string_type',
      });
      for (const issue of issues) expect([field, issue.loc]).toEqual([field, [field]]);
    }
  });

  it('points at the broken part of a malformed reference', () => {
    const bad = (password: unknown) =>
      validateConnectorConfig('POSTGRES_TARGET', { ...SAMPLES.POSTGRES_TARGET, password });
    expect(bad({ valueFrom: { secretKeyRef: { name: 'db' } } })).toEqual([
      { loc: ['password', 'valueFrom', 'secretKeyRef', 'key'], msg: 'Field required', type: 'missing' },
    ]);
    expect(bad({ valueFrom: { secretKeyRef: { name: 'Not_DNS', key: 'k' } } }).map((i) => i.loc)).toEqual([
      ['password', 'valueFrom', 'secretKeyRef', 'name'],
    ]);
    expect(bad({ valueFrom: { configMapKeyRef: { name: 'db', key: 'k' } } }).map((i) => i.loc)).toEqual(
      expect.arrayContaining([['password', 'valueFrom', 'configMapKeyRef']]),
    );
    expect(bad(42)).toEqual([
      {
        loc: ['password'],
        msg: 'Input should be a string or a secret reference {"valueFrom": {"secretKeyRef": {"name": …, "key": …}}}',
        type: 'string_type',
      },
    ]);
    expect(bad('')).toEqual([
      { loc: ['password'], msg: 'Must NOT have fewer than 1 characters', type: 'string_too_short' },
    ]);
  });

  it('recognises references', () => {
    expect(isSecretRef(ref())).toBe(true);
    expect(isSecretRef('x')).toBe(false);
    expect(isSecretRef({ valueFrom: {} })).toBe(false);
  });
});

describe('withConnectorDefaults', () => {
  it('fills the defaults in a copy', () => {
    const given = { ...SAMPLES.MSSQL_TARGET };
    const full = withConnectorDefaults('MSSQL_TARGET', given);
    expect(full).toMatchObject({ port: 1433, schema: 'dbo', ssl_mode: 'require' });
    expect(given).not.toHaveProperty('port');
    expect(withConnectorDefaults('POSTGRES_TARGET', SAMPLES.POSTGRES_TARGET)).toMatchObject({
      port: 5432,
      schema: 'public',
      ssl_mode: 'prefer',
    });
    expect(withConnectorDefaults('POSTGRES_SOURCE', SAMPLES.POSTGRES_SOURCE)).toMatchObject({
      port: 5432,
      ssh_port: 22,
      plugin_name: 'pgoutput',
    });
    expect(withConnectorDefaults('KAFKA_SOURCE', SAMPLES.KAFKA_SOURCE)).toMatchObject({
      security_protocol: 'PLAINTEXT',
      include_metadata: false,
    });
  });
});
