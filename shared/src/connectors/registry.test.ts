import { describe, expect, it } from '@jest/globals';
import {
  CONNECTOR_TYPE_IDS,
  CONNECTOR_TYPES,
  compileConnectorSchema,
  connectorType,
  connectorTypeBySegment,
  isConnectorTypeId,
  requireConnectorType,
  UnknownConnectorTypeError,
} from './index.js';

describe('connector type registry', () => {
  it('holds every type of spec 2.13 once, in the listed order', () => {
    expect(CONNECTOR_TYPES.map((t) => t.type)).toEqual([...CONNECTOR_TYPE_IDS]);
    expect(CONNECTOR_TYPES).toHaveLength(18);
    expect(new Set(CONNECTOR_TYPE_IDS).size).toBe(18);
  });

  it.each(CONNECTOR_TYPE_IDS)('%s: its schema compiles in strict mode and is a closed object', (type) => {
    expect(() => compileConnectorSchema(type)).not.toThrow();
    const def = requireConnectorType(type);
    expect(def.schema.type).toBe('object');
    expect(def.schema.additionalProperties).toBe(false);
    for (const [name, prop] of Object.entries(def.schema.properties)) {
      expect([name, typeof prop.title]).toEqual([name, 'string']);
      expect([name, typeof prop.description]).toEqual([name, 'string']);
    }
  });

  it('gives each type its direction', () => {
    const of = (d: string) => CONNECTOR_TYPES.filter((t) => t.direction === d).map((t) => t.type);
    expect(of('source')).toEqual([
      'KAFKA_SOURCE',
      'POSTGRES_SOURCE',
      'MYSQL_SOURCE',
      'MARIADB_SOURCE',
      'MSSQL_SOURCE',
      'MSSQL_LOG_SOURCE',
      'ORACLE_SOURCE',
      'IBMI_SOURCE',
      'MONGO_SOURCE',
    ]);
    expect(of('job')).toEqual(['JOB_SMT']);
    expect(of('target')).toHaveLength(8);
  });

  it('names the capture list: whitelist for database sources, topic for Kafka, none for targets and jobs', () => {
    for (const def of CONNECTOR_TYPES) {
      const expected =
        def.type === 'KAFKA_SOURCE' ? 'topic' : def.direction === 'source' ? 'whitelist' : null;
      expect([def.type, def.topics_config_key]).toEqual([def.type, expected]);
      if (def.topics_config_key) expect(def.schema.required).toContain(def.topics_config_key);
    }
    const whitelist = requireConnectorType('POSTGRES_SOURCE').schema.properties.whitelist as unknown;
    expect(whitelist).toMatchObject({ type: 'array', minItems: 1 });
  });

  it('marks the database sources as change-data-capture and nothing else', () => {
    expect(CONNECTOR_TYPES.filter((t) => t.cdc).map((t) => t.type)).toEqual([
      'POSTGRES_SOURCE',
      'MYSQL_SOURCE',
      'MARIADB_SOURCE',
      'MSSQL_SOURCE',
      'MSSQL_LOG_SOURCE',
      'ORACLE_SOURCE',
      'IBMI_SOURCE',
      'MONGO_SOURCE',
    ]);
  });

  it('gives the SSH tunnel fields to the database sources of spec 2.14 and the database targets', () => {
    const withSsh = CONNECTOR_TYPES.filter((t) => 'ssh_private_key' in t.schema.properties).map(
      (t) => t.type,
    );
    expect(withSsh).toEqual([
      'POSTGRES_SOURCE',
      'MYSQL_SOURCE',
      'MARIADB_SOURCE',
      'MSSQL_SOURCE',
      'MSSQL_LOG_SOURCE',
      'ORACLE_SOURCE',
      'IBMI_SOURCE',
      'ORACLE_TARGET',
      'POSTGRES_TARGET',
      'MSSQL_TARGET',
    ]);
  });

  it('maps the pre-flight segments and actions of spec 4.5', () => {
    expect(connectorTypeBySegment('kafka-source')?.preflight).toEqual([
      'check-credentials',
      'fetch-messages',
      'list-topics',
    ]);
    expect(connectorTypeBySegment('mssql-log-source')?.type).toBe('MSSQL_LOG_SOURCE');
    expect(connectorTypeBySegment('ibmi-source')?.preflight).toEqual([
      'check-credentials',
      'list-tables',
      'fetch-schema',
    ]);
    expect(connectorTypeBySegment('mongo-source')?.preflight).toEqual([
      'check-credentials',
      'list-collections',
      'fetch-schema',
    ]);
    expect(connectorTypeBySegment('snowflake-target')?.preflight).toEqual([
      'check-credentials',
      'warehouses',
    ]);
    for (const seg of [
      'oracle-target',
      'bigquery-target',
      'postgres-target',
      'mssql-target',
      'elasticsearch-target',
      'webhook-target',
    ]) {
      expect([seg, connectorTypeBySegment(seg)?.preflight]).toEqual([seg, ['check-credentials']]);
    }
  });

  it('looks types up, and refuses unknown ones', () => {
    expect(connectorType('POSTGRES_SOURCE')?.title).toBe('PostgreSQL source');
    expect(connectorType('NOPE')).toBeUndefined();
    expect(isConnectorTypeId('JOB_SMT')).toBe(true);
    expect(isConnectorTypeId('job_smt')).toBe(false);
    expect(() => requireConnectorType('NOPE')).toThrow(UnknownConnectorTypeError);
  });
});
