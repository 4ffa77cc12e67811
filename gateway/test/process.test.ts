import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from '@jest/globals';

// What `make run` starts: the built gateway as a process, on embedded PGlite,
// configured by environment variables only.
const main = resolve('gateway/dist/main.js');

async function waitFor(url: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not come up`);
}

describe('the gateway process', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-proc-'));
  let child: ChildProcess | undefined;
  let output = '';
  afterAll(() => {
    child?.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts on PGlite, serves the admin, never logs secrets, and stops cleanly on SIGTERM', async () => {
    if (!existsSync(main)) throw new Error('gateway/dist is missing: run `npm run build` (make test does)');
    const port = 20000 + Math.floor(Math.random() * 20000);
    child = spawn(process.execPath, [main], {
      env: {
        ...process.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        SLUICE_DATA_DIR: dataDir,
        SLUICE_ADMIN_EMAIL: 'root@example.com',
        SLUICE_ADMIN_PASSWORD: 'root-password-1',
        DATABASE_URL: '',
        SLUICE_BCRYPT_COST: '4',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (d) => (output += d));
    child.stderr?.on('data', (d) => (output += d));
    const base = `http://127.0.0.1:${port}/api`;
    await waitFor(`${base}/readyz`);

    const login = await fetch(`${base}/auth/jwt/login`, {
      method: 'POST',
      body: new URLSearchParams({ username: 'root@example.com', password: 'root-password-1' }),
    });
    expect(login.status).toBe(200);
    const { access_token } = (await login.json()) as { access_token: string };
    const me = await fetch(`${base}/users/me`, { headers: { Authorization: `Bearer ${access_token}` } });
    expect(await me.json()).toMatchObject({
      email: 'root@example.com',
      is_superuser: true,
      is_verified: true,
    });
    await fetch(`${base}/auth/forgot-password`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ email: 'root@example.com' }),
    });

    const exited = new Promise<number | null>((r) => child?.on('exit', (code) => r(code)));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(existsSync(join(dataDir, 'pgdata'))).toBe(true);
    const jwtSecret = readFileSync(join(dataDir, 'jwt-secret'), 'utf8').trim();
    for (const secret of ['root-password-1', access_token, jwtSecret]) expect(output).not.toContain(secret);
    expect(output).toContain('Mail written to the outbox');
    expect(output).toContain('Shutting down');
  }, 60_000);

  it('with SLUICE_SHUTDOWN_DELAY_MS, keeps answering new requests for that long after SIGTERM, then exits', async () => {
    const port = 20000 + Math.floor(Math.random() * 20000);
    const stopping = spawn(process.execPath, [main], {
      env: {
        ...process.env,
        PORT: String(port),
        HOST: '127.0.0.1',
        SLUICE_DATA_DIR: mkdtempSync(join(dataDir, 'delay-')),
        DATABASE_URL: '',
        SLUICE_SHUTDOWN_DELAY_MS: '2000',
      },
      stdio: 'ignore',
    });
    child = stopping;
    const base = `http://127.0.0.1:${port}/api`;
    await waitFor(`${base}/livez`);
    const exited = new Promise<number | null>((r) => stopping.on('exit', (code) => r(code)));
    const signalled = Date.now();
    stopping.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 1000));
    // A pod leaving a Service's endpoints still gets new connections for a moment: they are served.
    expect((await fetch(`${base}/livez`)).status).toBe(200);
    expect(await exited).toBe(0);
    expect(Date.now() - signalled).toBeGreaterThanOrEqual(2000);
    await expect(fetch(`${base}/livez`)).rejects.toThrow();
  }, 60_000);
});
