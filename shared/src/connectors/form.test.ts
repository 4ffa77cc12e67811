import { describe, expect, it } from '@jest/globals';
import {
  CONNECTOR_TYPE_IDS,
  CONNECTOR_TYPES,
  connectorTypeRead,
  formFields,
  requireConnectorType,
  secretPaths,
  type FormField,
} from './index.js';

const field = (type: string, name: string): FormField => {
  const f = formFields(type).find((x) => x.name === name);
  if (!f) throw new Error(`${type} has no field ${name}`);
  return f;
};

describe('formFields', () => {
  it.each(CONNECTOR_TYPE_IDS)('%s: one field per schema property, flags taken from the schema', (type) => {
    const schema = requireConnectorType(type).schema;
    const fields = formFields(type);
    expect(fields.map((f) => f.name)).toEqual(Object.keys(schema.properties));
    expect(fields.filter((f) => f.required).map((f) => f.name)).toEqual(schema.required ?? []);
    // A secret map (`headers.*`) is one field whose values are secrets.
    expect(fields.filter((f) => f.secret).map((f) => f.name)).toEqual(
      secretPaths(type).map((p) => p.replace(/\.\*$/, '')),
    );
    for (const f of fields) {
      expect(f.title.length).toBeGreaterThan(0);
      expect(f.description).toBeTruthy();
    }
  });

  it('derives the spec fields of KAFKA_SOURCE', () => {
    expect(formFields('KAFKA_SOURCE').map((f) => f.name)).toEqual([
      'topic',
      'bootstrap_servers',
      'consumer_group_id',
      'security_protocol',
      'sasl_mechanism',
      'sasl_username',
      'sasl_password',
      'include_metadata',
    ]);
    expect(field('KAFKA_SOURCE', 'topic')).toMatchObject({ type: 'string', required: true, secret: false });
    expect(field('KAFKA_SOURCE', 'sasl_password')).toEqual({
      name: 'sasl_password',
      title: 'SASL password',
      type: 'string',
      required: false,
      secret: true,
      description: 'Required when SASL is used',
      required_when: [{ field: 'security_protocol', values: ['SASL_PLAINTEXT', 'SASL_SSL'] }],
    });
    expect(field('KAFKA_SOURCE', 'security_protocol')).toMatchObject({
      enum: ['PLAINTEXT', 'SASL_PLAINTEXT', 'SASL_SSL', 'SSL'],
      default: 'PLAINTEXT',
      required: false,
    });
    expect(field('KAFKA_SOURCE', 'sasl_mechanism').enum).toEqual([
      'PLAIN',
      'SCRAM-SHA-256',
      'SCRAM-SHA-512',
      'GSSAPI',
      'OAUTHBEARER',
    ]);
    expect(field('KAFKA_SOURCE', 'include_metadata')).toMatchObject({ type: 'boolean', default: false });
  });

  it('derives the spec fields of KAFKA_TARGET and ORACLE_TARGET', () => {
    expect(formFields('KAFKA_TARGET').map((f) => [f.name, f.required])).toEqual([
      ['bootstrap_server', true],
      ['security_protocol', false],
      ['sasl_mechanism', false],
      ['sasl_username', false],
      ['sasl_password', false],
      ['ca_cert', false],
      ['group_id', false],
    ]);
    expect(formFields('ORACLE_TARGET').map((f) => [f.name, f.type, f.required, f.secret])).toEqual([
      ['database', 'string', true, false],
      ['user', 'string', true, false],
      ['password', 'string', true, true],
      ['host', 'string', true, false],
      ['port', 'string', true, false],
      ['server_name', 'string', true, false],
      ['server_id', 'string', true, false],
      // Ours: the SSH tunnel of every database connection.
      ['ssh_host', 'string', false, false],
      ['ssh_port', 'integer', false, false],
      ['ssh_user', 'string', false, false],
      ['ssh_private_key', 'string', false, true],
      ['ssh_private_key_passphrase', 'string', false, true],
      ['ssh_host_key', 'string', false, false],
    ]);
  });

  it('gives ports their engine default, the SSH tunnel its fields', () => {
    const defaults = Object.fromEntries(
      CONNECTOR_TYPES.filter((t) => 'port' in t.schema.properties && t.type !== 'ORACLE_TARGET').map((t) => [
        t.type,
        field(t.type, 'port').default,
      ]),
    );
    expect(defaults).toEqual({
      POSTGRES_SOURCE: 5432,
      MYSQL_SOURCE: 3306,
      MARIADB_SOURCE: 3306,
      MSSQL_SOURCE: 1433,
      MSSQL_LOG_SOURCE: 1433,
      ORACLE_SOURCE: 1521,
      IBMI_SOURCE: 8471,
      POSTGRES_TARGET: 5432,
      MSSQL_TARGET: 1433,
    });
    expect(field('POSTGRES_SOURCE', 'port')).toMatchObject({
      type: 'integer',
      minimum: 1,
      maximum: 65535,
      required: false,
    });
    expect(field('MYSQL_SOURCE', 'ssh_port')).toMatchObject({ type: 'integer', default: 22 });
    expect(field('MYSQL_SOURCE', 'ssh_private_key')).toMatchObject({
      title: 'SSH private key',
      secret: true,
      required: false,
      required_when: [{ field: 'ssh_host' }],
    });
    expect(field('POSTGRES_SOURCE', 'ssl_mode')).toMatchObject({
      title: 'SSL mode',
      enum: ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full'],
      default: 'prefer',
    });
    expect(field('POSTGRES_SOURCE', 'whitelist')).toMatchObject({
      type: 'array',
      required: true,
      items: { type: 'string' },
    });
  });

  it('MSSQL_TARGET has the fields of POSTGRES_TARGET with port 1433 and schema dbo', () => {
    const strip = (fs: FormField[]) => fs.map(({ default: _d, description: _x, ...f }) => f);
    expect(strip(formFields('MSSQL_TARGET'))).toEqual(strip(formFields('POSTGRES_TARGET')));
    expect(field('MSSQL_TARGET', 'port').default).toBe(1433);
    expect(field('MSSQL_TARGET', 'schema').default).toBe('dbo');
    expect(field('POSTGRES_TARGET', 'schema').default).toBe('public');
  });

  it('MARIADB_SOURCE has exactly the fields of MYSQL_SOURCE', () => {
    const strip = (fs: FormField[]) => fs.map(({ description: _x, ...f }) => f);
    expect(strip(formFields('MARIADB_SOURCE'))).toEqual(strip(formFields('MYSQL_SOURCE')));
  });

  it('derives conditional requirements', () => {
    expect(field('SNOWFLAKE_TARGET', 'password').required_when).toEqual([
      { field: 'authenticator', values: ['SNOWFLAKE'] },
    ]);
    expect(field('SNOWFLAKE_TARGET', 'private_key').required_when).toEqual([
      { field: 'authenticator', values: ['SNOWFLAKE_JWT'] },
    ]);
    expect(field('WEBHOOK_TARGET', 'bearer_token').required_when).toEqual([
      { field: 'auth_type', values: ['bearer'] },
    ]);
    expect(field('ELASTICSEARCH_TARGET', 'nodes')).toMatchObject({
      type: 'array',
      items: { type: 'string', format: 'uri' },
    });
  });
});

describe('connectorTypeRead', () => {
  it('exposes the type, its form fields and its JSON Schema as plain JSON', () => {
    const read = connectorTypeRead(requireConnectorType('POSTGRES_SOURCE'));
    expect(read).toMatchObject({
      type: 'POSTGRES_SOURCE',
      direction: 'source',
      cdc: true,
      topics_config_key: 'whitelist',
      segment: 'postgres-source',
      preflight_actions: ['check-credentials', 'list-tables', 'fetch-schema'],
    });
    expect(read.fields).toEqual(formFields('POSTGRES_SOURCE'));
    expect(read.json_schema).toMatchObject({
      type: 'object',
      additionalProperties: false,
      required: expect.any(Array),
    });
    expect(JSON.parse(JSON.stringify(read))).toEqual(read);
  });
});
