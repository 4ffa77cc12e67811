import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OutboundPolicy } from '@sluice/shared/net';
import { createScratchDatabase, describeWithPostgres, type ScratchDatabase } from '@sluice/testing/postgres';
import { startBastion, type Bastion } from '@sluice/testing/sshd';
import { checkMysql, checkOracle, checkPostgres, listPostgresTables } from '../src/index.js';

// Pre-flight checks through a real OpenSSH bastion (testing/src/sshd.ts) to
// the test PostgreSQL and MariaDB servers behind it, and the sentence a user
// reads for each hop that can fail: the bastion unreachable, the login
// refused, the host key not the configured one (or none configured), the
// database behind the bastion refusing, the bastion's address denied by the
// outbound policy. None of them holds a secret.

/** The bastion is on 127.0.0.1, which the default policy denies: the tests allow loopback. */
const opts = { policy: new OutboundPolicy({ allow: ['127.0.0.0/8'] }), timeoutMs: 10_000 };

/** A path for a throw-away key in a directory of its own. */
const keyDir = mkdtempSync(join(tmpdir(), 'sluice-ssh-test-'));
const keyFile = () => join(keyDir, 'p384');

async function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

describeWithPostgres('pre-flight checks through an SSH bastion', () => {
  let bastion: Bastion;
  let db: ScratchDatabase;
  /** A PostgreSQL source reached through the bastion; host and port as the bastion sees them. */
  const pgConfig = (more: Record<string, unknown> = {}): Record<string, unknown> => ({
    ...db.settings,
    whitelist: ['public.t'],
    ...bastion.tunnelFields(),
    ...more,
  });
  const expectNoSecret = (message: string, key: string) => {
    for (const secret of [db.settings.password, key]) if (secret) expect(message).not.toContain(secret);
  };
  const failure = async (work: Promise<unknown>): Promise<string> => {
    try {
      await work;
    } catch (e) {
      return (e as Error).message;
    }
    throw new Error('the check succeeded');
  };

  beforeAll(async () => {
    bastion = await startBastion();
    db = await createScratchDatabase('ssh_preflight');
    await db.client.query('create table public.t (id int primary key)');
  });
  afterAll(async () => {
    await bastion?.close();
    await db?.drop();
    rmSync(keyDir, { recursive: true, force: true });
  });

  it('checks PostgreSQL through the tunnel, the host key given as a key line or as a fingerprint', async () => {
    const checked = await checkPostgres(pgConfig(), opts, 'source');
    expect(checked.server_version).toMatch(/^\d+/);
    const tables = await listPostgresTables(pgConfig(), opts);
    expect(tables.map((t) => t.name)).toEqual(['public.t']);
    // The RSA key's line: Sluice asks the bastion for that key, not its preferred Ed25519.
    await expect(
      checkPostgres(pgConfig({ ssh_host_key: bastion.hostKeys.rsa.line }), opts, 'target'),
    ).resolves.toMatchObject({ warnings: [] });
    await expect(
      checkPostgres(pgConfig({ ssh_host_key: bastion.hostKeys.ed25519.fingerprint }), opts, 'target'),
    ).resolves.toMatchObject({ warnings: [] });
  });

  it('checks MariaDB through the tunnel', async () => {
    const url = process.env.SLUICE_TEST_MYSQL_URL;
    if (!url) throw new Error('needs SLUICE_TEST_MYSQL_URL (scripts/with-mariadb.sh)');
    const u = new URL(url);
    const config = {
      host: u.hostname,
      port: Number(u.port || 3306),
      user: decodeURIComponent(u.username),
      password: decodeURIComponent(u.password),
      ssl_mode: 'preferred',
      whitelist: ['sluice_test.t'],
      ...bastion.tunnelFields(),
    };
    const checked = await checkMysql('MariaDB', config, opts);
    expect(checked.server_version).toMatch(/MariaDB/);
  });

  it("reaches an Oracle listener through the tunnel (a stand-in that reads the driver's connect packet)", async () => {
    // No Oracle server runs here: the stand-in receives what the driver sends through the bastion, then hangs up.
    const received: Buffer[] = [];
    const listener = createServer((socket: Socket) => {
      socket.once('data', (chunk) => {
        received.push(Buffer.from(chunk));
        socket.destroy();
      });
    });
    await new Promise<void>((r) => listener.listen(0, '127.0.0.1', () => r()));
    const port = (listener.address() as { port: number }).port;
    try {
      const config = {
        host: '127.0.0.1',
        port: String(port),
        database: 'SLUICE_SVC',
        user: 'sluice',
        password: 'secret-pw',
        server_name: 'x',
        server_id: '1',
        ...bastion.tunnelFields(),
      };
      const message = await failure(checkOracle(config, opts));
      expect(Buffer.concat(received).toString('latin1')).toContain('SERVICE_NAME=SLUICE_SVC');
      expect(message).toContain(
        `127.0.0.1:${port} through SSH bastion 127.0.0.1:${bastion.port} closed the connection during the Oracle handshake`,
      );
      expect(message).not.toContain('secret-pw');
      // Through a bastion that is down: the tunnel's sentence, not the driver's.
      await bastion.stop();
      try {
        expect(await failure(checkOracle(config, opts))).toMatch(
          new RegExp(`^Connection refused by SSH bastion 127\\.0\\.0\\.1:${bastion.port}`),
        );
      } finally {
        await bastion.start();
      }
    } finally {
      listener.close();
    }
  });

  it('says the bastion refused the login for a key it does not authorize', async () => {
    const stranger = bastion.newUserKey('ed25519', 'openssh', { authorize: false });
    const message = await failure(
      checkPostgres(pgConfig({ ssh_private_key: stranger.privateKeyBase64 }), opts, 'source'),
    );
    expect(message).toBe(
      `SSH bastion 127.0.0.1:${bastion.port} refused the login of user "root" with the configured private key: ` +
        "check ssh_user, and that the key's public half is in that user's ~/.ssh/authorized_keys on the bastion",
    );
    expectNoSecret(message, stranger.privateKeyBase64);
  });

  it('refuses a bastion whose host key is not the configured one, naming the key it presented', async () => {
    const wrong = bastion.newUserKey('ed25519', 'openssh', { authorize: false }).publicLine;
    const message = await failure(checkPostgres(pgConfig({ ssh_host_key: wrong }), opts, 'source'));
    expect(message).toContain(
      `SSH bastion 127.0.0.1:${bastion.port} presented the host key ssh-ed25519 ${bastion.hostKeys.ed25519.fingerprint}, not the expected SHA256:`,
    );
    expect(message).toMatch(/the bastion's key changed or the connection is intercepted/);
    // A key of a type the bastion does not have (its ECDSA key is P-256): said as such.
    execFileSync('ssh-keygen', ['-q', '-t', 'ecdsa', '-b', '384', '-N', '', '-f', keyFile()]);
    const noSuchType = await failure(
      checkPostgres(pgConfig({ ssh_host_key: readFileSync(`${keyFile()}.pub`, 'utf8') }), opts, 'source'),
    );
    expect(noSuchType).toBe(
      `SSH bastion 127.0.0.1:${bastion.port} has no ecdsa-sha2-nistp384 host key, the type of ssh_host_key: ` +
        "check that ssh_host_key is this bastion's key",
    );
    // No host key configured: refused too, with the fingerprint to confirm.
    const { ssh_host_key: _omitted, ...withoutKey } = pgConfig();
    const missing = await failure(checkPostgres(withoutKey, opts, 'source'));
    expect(missing).toContain('cannot be trusted without its host key: set ssh_host_key');
    expect(missing).toContain(bastion.hostKeys.ed25519.fingerprint);
  });

  it('says when the database behind the bastion refuses the connection', async () => {
    const port = await closedPort();
    const message = await failure(checkPostgres(pgConfig({ port }), opts, 'source'));
    expect(message).toMatch(
      new RegExp(
        `^SSH bastion 127\\.0\\.0\\.1:${bastion.port} could not open a connection to 127\\.0\\.0\\.1:${port} \\(.+\\): the database refuses connections from the bastion`,
      ),
    );
  });

  it('says when the bastion is unreachable, and that the outbound policy applies to the bastion', async () => {
    await bastion.stop();
    try {
      const message = await failure(checkPostgres(pgConfig(), opts, 'source'));
      expect(message).toBe(
        `Connection refused by SSH bastion 127.0.0.1:${bastion.port}: nothing listens there: ` +
          'check ssh_host and ssh_port, and that the bastion accepts connections from Sluice',
      );
    } finally {
      await bastion.start();
    }
    // The default policy denies loopback: the bastion's address is what it checks.
    const denied = await failure(
      checkPostgres(pgConfig(), { ...opts, policy: new OutboundPolicy() }, 'source'),
    );
    expect(denied).toMatch(/127\.0\.0\.1.*not allowed/);
    await expect(checkPostgres(pgConfig(), opts, 'source')).resolves.toBeDefined();
  });
});
