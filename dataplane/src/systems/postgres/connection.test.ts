import { describe, expect, it } from '@jest/globals';
import { Socket } from 'node:net';
import type { SshTunnel } from '../ssh/connection.js';
import { pgConfig, pgWhere, type PostgresSettings } from './connection.js';

// Through an SSH tunnel the driver dials 127.0.0.1:<the tunnel's port>, and
// TLS still verifies the server's own name; a tunnelled server is never
// dialled directly.

const settings: PostgresSettings = {
  host: 'db.internal',
  port: 5433,
  database: 'shop',
  user: 'cdc',
  password: 'pw',
  ssl_mode: 'verify-full',
  ssh_host: 'bastion.example.com',
  ssh_user: 'tunnel',
  ssh_private_key: 'a2V5',
};
/** The two members of a tunnel pgConfig reads. */
const tunnel = { port: 40001, socket: () => new Socket() } as unknown as SshTunnel;

describe('pgConfig through a tunnel', () => {
  it('dials the local end and verifies the server name of the database', () => {
    const config = pgConfig(settings, { tunnel });
    expect(config).toMatchObject({ host: '127.0.0.1', port: 40001 });
    expect(config.ssl).toMatchObject({
      rejectUnauthorized: true,
      host: 'db.internal',
      servername: 'db.internal',
    });
    // An IP address is verified as the host (no SNI for an address).
    const byIp = pgConfig({ ...settings, host: '10.0.3.7' }, { tunnel });
    expect(byIp.ssl).toMatchObject({ host: '10.0.3.7' });
    expect(byIp.ssl).not.toHaveProperty('servername');
  });

  it('refuses to build a direct connection to a tunnelled server', () => {
    expect(() => pgConfig(settings)).toThrow('A tunnelled PostgreSQL server needs its SSH tunnel');
  });

  it('names the server with its bastion in messages', () => {
    expect(pgWhere(settings)).toBe('db.internal:5433 through SSH bastion bastion.example.com:22');
    expect(pgWhere({ host: 'db', port: 5432 })).toBe('db:5432');
  });
});
