import { describe, expect, it } from '@jest/globals';
import type { WorkerConfig } from '@sluice/shared/catalog';
import { engineFor, ENGINES } from './engines.js';

// A worker never ignores a tunnel setting: an engine that cannot go through
// the SSH bastion refuses to start with `ssh_host` and says so.

const config = (role: 'source' | 'target', type: string, configuration: Record<string, unknown>) =>
  ({ connector_id: 'c1', connector_type: type, role, configuration }) as unknown as WorkerConfig;

describe('engineFor', () => {
  it('starts the PostgreSQL, MySQL, MariaDB and Oracle engines with a tunnel, which they go through', () => {
    const tunnel = { host: 'db.internal', ssh_host: 'bastion.example.com' };
    expect(engineFor(config('target', 'ORACLE_TARGET', tunnel))).toBe(ENGINES.get('target:ORACLE_TARGET'));
    expect(engineFor(config('source', 'POSTGRES_SOURCE', tunnel))).toBe(
      ENGINES.get('source:POSTGRES_SOURCE'),
    );
    expect(engineFor(config('target', 'POSTGRES_TARGET', tunnel))).toBe(
      ENGINES.get('target:POSTGRES_TARGET'),
    );
    for (const type of ['MYSQL_SOURCE', 'MARIADB_SOURCE']) {
      expect(engineFor(config('source', type, tunnel))).toBe(ENGINES.get(`source:${type}`));
    }
  });

  it('refuses an engine that cannot tunnel, rather than connecting straight to the host', () => {
    // The schemas give Kafka no tunnel fields; a resource written by hand could still carry one.
    expect(
      engineFor(config('target', 'KAFKA_TARGET', { bootstrap_server: 'k:9092', ssh_host: 'bastion' })),
    ).toBe(
      'KAFKA_TARGET target workers cannot connect through an SSH bastion (ssh_host) in this version of Sluice: ' +
        'remove ssh_host and make the server reachable directly',
    );
    expect(engineFor(config('target', 'KAFKA_TARGET', { bootstrap_server: 'k:9092' }))).toBe(
      ENGINES.get('target:KAFKA_TARGET'),
    );
    expect(engineFor(config('source', 'MSSQL_SOURCE', { ssh_host: 'bastion' }))).toMatch(
      /not supported by this version/,
    );
  });
});
