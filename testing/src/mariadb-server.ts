import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '@sluice/shared/net';

// A MariaDB server of one test's own, for what the shared server of
// scripts/with-mariadb.sh must not undergo while other tests use it: stopped
// and started again, killed, frozen. Its own datadir under a temporary directory, a
// free 127.0.0.1 port, the binary log of with-mariadb.sh (ROW format, FULL
// row images, server id 1), a user `sluice` with every privilege and a
// random password, and the database `sluice_test`. The port and the data
// survive `stop`/`kill` and `start`, as a restarted server's would.

const MARIADBD = '/usr/sbin/mariadbd';
const run = promisify(execFile);

export interface PrivateMariadb {
  host: string;
  port: number;
  /** `mysql://sluice:…@127.0.0.1:port/sluice_test`, as SLUICE_TEST_MYSQL_URL. */
  url: URL;
  /** The directory the binary logs are in (`binlog.000001`, …), for mariadb-binlog. */
  binlogDir: string;
  /** Runs SQL as root over the server's socket (the `mariadb` client); resolves with its tab-separated output. */
  sql(statements: string): Promise<string>;
  /** A clean shutdown (SIGTERM, as `systemctl stop` or `mariadb-admin shutdown`); resolves once it exited. */
  stop(): Promise<void>;
  /** SIGKILL of mariadbd (a crash); resolves once it exited. The next start runs crash recovery. */
  kill(): Promise<void>;
  /** SIGSTOP of mariadbd: its connections stay open and nothing answers (a hung server, or a host gone silent). */
  freeze(): void;
  /** SIGCONT after `freeze`. */
  thaw(): void;
  /** Starts the server again on the same port and data; resolves once it answers. */
  start(): Promise<void>;
  /** Stops the server and removes its directory. */
  close(): Promise<void>;
}

export async function startPrivateMariadb(): Promise<PrivateMariadb> {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-private-mariadb-'));
  const port = await freePort();
  const socket = join(dir, 'mysqld.sock');
  // The server runs as the invoking user; root must say so.
  const userOpt = process.getuid?.() === 0 ? ['--user=root'] : [];
  await run(
    'mariadb-install-db',
    [
      '--no-defaults',
      ...userOpt,
      `--datadir=${join(dir, 'data')}`,
      '--auth-root-authentication-method=socket',
      '--skip-test-db',
    ],
    { maxBuffer: 16 * 1024 * 1024 },
  );
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const client = (statements: string) =>
    run('mariadb', ['--no-defaults', `--socket=${socket}`, '-uroot', '-N', '-B', '-e', statements], {
      maxBuffer: 64 * 1024 * 1024,
    }).then((r) => r.stdout);

  const start = async () => {
    const server = spawn(
      MARIADBD,
      [
        '--no-defaults',
        ...userOpt,
        `--datadir=${join(dir, 'data')}`,
        `--socket=${socket}`,
        `--pid-file=${join(dir, 'mysqld.pid')}`,
        '--bind-address=127.0.0.1',
        `--port=${port}`,
        `--log-bin=${join(dir, 'binlog')}`,
        '--binlog-format=ROW',
        '--binlog-row-image=FULL',
        '--server-id=1',
        '--innodb-buffer-pool-size=32M',
        '--innodb-log-file-size=16M',
        '--skip-name-resolve',
        `--log-error=${join(dir, 'error.log')}`,
        '--open-files-limit=1024',
      ],
      { stdio: 'ignore' },
    );
    child = server;
    exited = new Promise((resolve) => server.once('exit', () => resolve()));
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (server.exitCode !== null || server.signalCode !== null) {
        throw new Error(`mariadbd exited: ${errorLogTail()}`);
      }
      // Answering on TCP, not only on the socket: a worker connects there.
      const answered = await client('select 1')
        .then(() => true)
        .catch(() => false);
      if (answered) return;
      if (Date.now() > deadline) throw new Error(`mariadbd did not answer in 60 s: ${errorLogTail()}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };
  const errorLogTail = () => {
    try {
      return readFileSync(join(dir, 'error.log'), 'utf8').split('\n').slice(-20).join('\n');
    } catch {
      return '(no error log)';
    }
  };
  const signal = async (sig: NodeJS.Signals) => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    c.kill(sig);
    await exited;
  };

  const password = randomBytes(12).toString('hex');
  try {
    await start();
    await client(
      `create user 'sluice'@'127.0.0.1' identified by '${password}';
       grant all privileges on *.* to 'sluice'@'127.0.0.1' with grant option;
       create database sluice_test;`,
    );
  } catch (e) {
    await signal('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    host: '127.0.0.1',
    port,
    url: new URL(`mysql://sluice:${password}@127.0.0.1:${port}/sluice_test`),
    binlogDir: dir,
    sql: client,
    stop: () => signal('SIGTERM'),
    freeze: () => void child?.kill('SIGSTOP'),
    thaw: () => void child?.kill('SIGCONT'),
    kill: () => signal('SIGKILL'),
    start,
    close: async () => {
      child?.kill('SIGCONT');
      await signal('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
