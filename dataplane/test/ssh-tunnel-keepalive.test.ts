import { afterAll, beforeAll, expect, it } from '@jest/globals';
import pg from 'pg';
import { describeWithPostgres, testPostgresUrl } from '@sluice/testing/postgres';
import { startBastion, type Bastion } from '@sluice/testing/sshd';
import { SshTunnel, sshTunnelOf, type SshTunnelSettings } from '../src/systems/ssh/connection.js';

// A bastion that hangs (its processes stopped, its TCP connections still
// open) is found out by the tunnel's keepalives, not by the operating
// system's TCP time-outs minutes later: the sessions through it fail with
// the tunnel's sentence, and once the bastion answers again the next
// session connects through the same tunnel. Keepalives every 200 ms here
// (10 s in production).

describeWithPostgres('SSH tunnel keepalives', () => {
  let bastion: Bastion;
  let tunnel: SshTunnel | undefined;
  const url = () => new URL(testPostgresUrl() as string);
  const session = async () => {
    const u = url();
    const c = new pg.Client({
      host: '127.0.0.1',
      port: tunnel!.port,
      stream: () => tunnel!.socket(),
      database: u.pathname.slice(1) || 'postgres',
      user: decodeURIComponent(u.username),
      password: decodeURIComponent(u.password),
      ssl: false,
    });
    await c.connect();
    return c;
  };

  beforeAll(async () => {
    bastion = await startBastion();
  });
  afterAll(async () => {
    await tunnel?.close();
    await bastion?.close();
  });

  it('fails the sessions of a hung bastion with the tunnel sentence, then reconnects', async () => {
    const settings = sshTunnelOf(bastion.tunnelFields()) as SshTunnelSettings;
    tunnel = await SshTunnel.open(
      settings,
      { host: url().hostname, port: Number(url().port || 5432) },
      { keepaliveMs: 200 },
    );
    const first = await session();
    expect((await first.query('select 1 as one')).rows).toEqual([{ one: 1 }]);
    const failed = new Promise<Error>((resolve) => first.once('error', resolve));

    bastion.freeze();
    const started = Date.now();
    try {
      const error = await failed;
      expect(error.message).toBe(
        `The connection to SSH bastion 127.0.0.1:${bastion.port} was lost (no answer to keepalives)`,
      );
      // Three unanswered keepalives of 200 ms, with room for a busy machine.
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      bastion.thaw();
    }
    await first.end().catch(() => undefined);

    const second = await session();
    expect((await second.query('select 2 as two')).rows).toEqual([{ two: 2 }]);
    await second.end();
  });
});
