import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import request from 'supertest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { GatewayContext } from '../src/context.js';
import { createContext, createLogger } from '../src/server.js';
import { insertUser } from '../src/features/users/users.repository.js';
import type { DbKind, TestUser } from './harness.js';

/**
 * A gateway that can be stopped and started again on the same service
 * database and data directory, as a restarted process would be: PGlite keeps
 * its files under the data directory, PostgreSQL a database of its own.
 * `restart` may change settings (turn the periodic jobs on, for instance).
 */
export interface RestartableGateway {
  readonly ctx: GatewayContext & { closeDb(): Promise<void> };
  readonly http: ReturnType<typeof request>;
  readonly dataDir: string;
  restart(env?: Record<string, string>): Promise<void>;
  user(): Promise<TestUser>;
  superuser(): Promise<TestUser>;
  close(): Promise<void>;
}

let counter = 0;

export async function startRestartableGateway(
  kind: DbKind,
  env: Record<string, string> = {},
): Promise<RestartableGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-restart-'));
  let dbName: string | undefined;
  let url: string | undefined;
  if (kind === 'postgres') {
    const admin = process.env.SLUICE_TEST_DATABASE_URL as string;
    dbName = `sluice_test_${randomUUID().replace(/-/g, '')}`;
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    await client.query(`create database ${dbName}`);
    await client.end();
    const u = new URL(admin);
    u.pathname = `/${dbName}`;
    url = u.toString();
  }
  const base = {
    SLUICE_DATA_DIR: dataDir,
    SLUICE_BCRYPT_COST: '4',
    SLUICE_VALIDATE_RESPONSES: 'true',
    SLUICE_EMBEDDED_OPERATOR: 'false',
    SLUICE_SCHEDULER: 'false',
    LOG_LEVEL: process.env.SLUICE_TEST_LOG_LEVEL ?? 'silent',
    ...(url ? { DATABASE_URL: url } : {}),
  };
  let settings = { ...base, ...env };
  let ctx: GatewayContext & { closeDb(): Promise<void> };
  let http: ReturnType<typeof request>;
  let open = false;
  const start = async () => {
    const config = loadConfig(settings);
    ctx = await createContext(config, createLogger(settings.LOG_LEVEL), {
      ...(kind === 'pglite' ? { pgliteDir: join(dataDir, 'pgdata') } : {}),
    });
    http = request(buildApp(ctx).app);
    open = true;
  };
  const stop = async () => {
    if (open) await ctx.closeDb();
    open = false;
  };
  await start();

  const login = async (email: string, password: string) => {
    const res = await http.post('/api/auth/jwt/login').type('form').send({ username: email, password });
    if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body.access_token as string;
  };
  const withToken = (id: string, email: string, password: string, token: string): TestUser => ({
    id,
    email,
    password,
    token,
    auth: { Authorization: `Bearer ${token}` },
  });
  return {
    get ctx() {
      return ctx;
    },
    get http() {
      return http;
    },
    dataDir,
    async restart(more = {}) {
      await stop();
      settings = { ...settings, ...more };
      await start();
    },
    async user() {
      const email = `deluser${++counter}-${randomUUID().slice(0, 6)}@example.com`;
      const password = 'correct-horse-battery';
      const res = await http.post('/api/auth/register').send({ email, password });
      if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
      return withToken(res.body.id, email, password, await login(email, password));
    },
    async superuser() {
      const email = `deladmin${++counter}-${randomUUID().slice(0, 6)}@example.com`;
      const password = 'admin-password-1';
      const u = await insertUser(ctx.db, {
        email,
        hashed_password: await ctx.passwords.hash(password),
        is_active: true,
        is_superuser: true,
        is_verified: true,
        active_env_id: null,
        tokens_valid_after: null,
      });
      return withToken(u.id, email, password, await login(email, password));
    },
    async close() {
      await stop();
      if (dbName) {
        const c = new pg.Client({ connectionString: process.env.SLUICE_TEST_DATABASE_URL });
        await c.connect();
        await c.query(`drop database if exists ${dbName} with (force)`);
        await c.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
