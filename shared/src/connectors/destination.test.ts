import { describe, expect, it } from '@jest/globals';
import { CONNECTOR_TYPE_IDS } from './registry.js';
import { changedDestination, destinationFields } from './destination.js';
import { secretPaths } from './validate.js';

describe('where a connector sends its credentials', () => {
  it('names a destination for every type that has secrets to send', () => {
    for (const type of CONNECTOR_TYPE_IDS) {
      if (secretPaths(type).length === 0 || type === 'BIGQUERY_TARGET') continue;
      expect([type, destinationFields(type).length > 0]).toEqual([type, true]);
    }
    expect(destinationFields('POSTGRES_SOURCE')).toEqual([
      'host',
      'port',
      'ssh_host',
      'ssh_port',
      'ssh_host_key',
    ]);
    expect(destinationFields('WEBHOOK_TARGET')).toEqual(['url']);
    expect(destinationFields('KAFKA_SOURCE')).toEqual(['bootstrap_servers']);
    expect(destinationFields('KAFKA_TARGET')).toEqual(['bootstrap_server']);
  });

  it('sees a changed host or port, not an omitted default nor other fields', () => {
    const stored = { host: 'db', port: 5432, database: 'a', user: 'u', password: 'x' };
    expect(changedDestination('POSTGRES_TARGET', stored, { ...stored, host: 'evil' })).toBe('host');
    expect(changedDestination('POSTGRES_TARGET', stored, { ...stored, port: 6543 })).toBe('port');
    const { port: _port, ...noPort } = stored;
    expect(changedDestination('POSTGRES_TARGET', stored, noPort)).toBeUndefined();
    expect(changedDestination('POSTGRES_TARGET', stored, { ...stored, database: 'b' })).toBeUndefined();
    expect(changedDestination('POSTGRES_TARGET', null, stored)).toBeUndefined();
    // Trusting another bastion key is trusting another party with the credentials.
    const tunnelled = { ...stored, ssh_host: 'bastion', ssh_host_key: 'SHA256:a' };
    expect(changedDestination('POSTGRES_TARGET', tunnelled, { ...tunnelled, ssh_host_key: 'SHA256:b' })).toBe(
      'ssh_host_key',
    );
  });
});
