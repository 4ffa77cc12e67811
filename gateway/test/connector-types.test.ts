import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CONNECTOR_TYPE_IDS, validateConnectorConfig } from '@sluice/shared/connectors';
import { startTestGateway, type TestGateway, type TestUser } from './harness.js';

interface Field {
  name: string;
  title: string;
  type: string;
  required: boolean;
  secret: boolean;
  enum?: unknown[];
  default?: unknown;
  required_when?: { field: string; values?: unknown[] }[];
}
interface TypeRead {
  type: string;
  direction: string;
  title: string;
  cdc: boolean;
  topics_config_key: string | null;
  segment: string;
  preflight_actions: string[];
  fields: Field[];
  json_schema: Record<string, unknown>;
}

// The list does not touch the database: PGlite suffices.
describe('GET /api/connector-types/', () => {
  let gw: TestGateway;
  let alice: TestUser;
  let types: TypeRead[];
  const byType = (t: string): TypeRead => {
    const found = types.find((x) => x.type === t);
    if (!found) throw new Error(`${t} is not listed`);
    return found;
  };
  const field = (t: string, name: string): Field => {
    const found = byType(t).fields.find((f) => f.name === name);
    if (!found) throw new Error(`${t} has no field ${name}`);
    return found;
  };

  beforeAll(async () => {
    gw = await startTestGateway('pglite');
    alice = await gw.user();
    const res = await gw.http.get('/api/connector-types/').set(alice.auth);
    expect(res.status).toBe(200);
    types = res.body as TypeRead[];
  });
  afterAll(() => gw.close());

  it('refuses anonymous callers', async () => {
    const res = await gw.http.get('/api/connector-types/');
    expect(res.status).toBe(401);
    expect(res.body).toHaveProperty('detail');
    const forged = await gw.http.get('/api/connector-types/').set({ Authorization: 'Bearer not-a-token' });
    expect(forged.status).toBe(401);
  });

  it('lists all 18 types of spec 2.13 to any authenticated user', async () => {
    expect(types.map((t) => t.type)).toEqual([...CONNECTOR_TYPE_IDS]);
    expect(types).toHaveLength(18);
    const bob = await gw.user();
    const again = await gw.http.get('/api/connector-types/').set(bob.auth);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(types);
  });

  it('KAFKA_SOURCE: capture key topic, sasl_password secret, the spec fields', () => {
    const kafka = byType('KAFKA_SOURCE');
    expect(kafka).toMatchObject({
      direction: 'source',
      cdc: false,
      topics_config_key: 'topic',
      segment: 'kafka-source',
      preflight_actions: ['check-credentials', 'fetch-messages', 'list-topics'],
    });
    expect(kafka.fields.map((f) => f.name)).toEqual([
      'topic',
      'bootstrap_servers',
      'consumer_group_id',
      'security_protocol',
      'sasl_mechanism',
      'sasl_username',
      'sasl_password',
      'include_metadata',
    ]);
    expect(field('KAFKA_SOURCE', 'sasl_password')).toMatchObject({
      secret: true,
      required: false,
      type: 'string',
      required_when: [{ field: 'security_protocol', values: ['SASL_PLAINTEXT', 'SASL_SSL'] }],
    });
    expect(kafka.fields.filter((f) => f.secret).map((f) => f.name)).toEqual(['sasl_password']);
    expect(field('KAFKA_SOURCE', 'topic')).toMatchObject({ required: true, secret: false });
  });

  it('POSTGRES_SOURCE: a CDC source with a whitelist, port 5432, secret password and SSH key', () => {
    const pg = byType('POSTGRES_SOURCE');
    expect(pg).toMatchObject({ direction: 'source', cdc: true, topics_config_key: 'whitelist' });
    expect(field('POSTGRES_SOURCE', 'whitelist')).toMatchObject({ type: 'array', required: true });
    expect(field('POSTGRES_SOURCE', 'port')).toMatchObject({
      type: 'integer',
      default: 5432,
      required: false,
    });
    expect(pg.fields.filter((f) => f.secret).map((f) => f.name)).toEqual([
      'password',
      'ssh_private_key',
      'ssh_private_key_passphrase',
    ]);
    expect(field('POSTGRES_SOURCE', 'ssl_mode').enum).toEqual(
      expect.arrayContaining(['disable', 'require', 'verify-ca', 'verify-full']),
    );
  });

  it('targets and the job type carry no capture list', () => {
    for (const t of types.filter((x) => x.direction !== 'source')) {
      expect([t.type, t.topics_config_key, t.cdc]).toEqual([t.type, null, false]);
    }
    expect(byType('JOB_SMT').direction).toBe('job');
    expect(field('MSSQL_TARGET', 'port').default).toBe(1433);
    expect(field('MSSQL_TARGET', 'schema').default).toBe('dbo');
    expect(field('ORACLE_TARGET', 'port')).toMatchObject({ type: 'string', required: true });
  });

  it('serves each json_schema so that a client can validate with it', () => {
    const pg = byType('POSTGRES_SOURCE').json_schema;
    expect(pg).toMatchObject({ type: 'object', additionalProperties: false });
    expect((pg.properties as Record<string, { 'x-secret'?: boolean }>).password?.['x-secret']).toBe(true);
    // The served required list is the one the registry enforces.
    const config = Object.fromEntries(
      (pg.required as string[]).map((k) => [k, k === 'whitelist' ? ['public.t'] : 'x']),
    );
    expect(validateConnectorConfig('POSTGRES_SOURCE', config)).toEqual([]);
  });

  it('is documented in the OpenAPI document with its response schema', () => {
    const paths = gw.openapi.paths as Record<string, Record<string, { responses: Record<string, unknown> }>>;
    const op = paths['/connector-types/']?.get;
    expect(op?.responses['200']).toMatchObject({
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ConnectorTypeList' } } },
    });
    const schemas = (gw.openapi.components as { schemas: Record<string, unknown> }).schemas;
    expect(schemas).toHaveProperty('ConnectorTypeRead');
    expect(schemas).toHaveProperty('ConnectorFormField');
  });
});
