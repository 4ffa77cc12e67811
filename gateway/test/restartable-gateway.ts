import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { GatewayContext } from '../src/context.js';
import { createContext, createLogger } from '../src/server.js';
import { createPostgresDatabase, testGatewayEnv, testUsers, type DbKind, type TestUser } from './harness.js';

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

export async function startRestartableGateway(
  kind: DbKind,
  env: Record<string, string> = {},
): Promise<RestartableGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-restart-'));
  const pgdb = kind === 'postgres' ? await createPostgresDatabase() : undefined;
  let settings = { ...testGatewayEnv(dataDir, pgdb?.url), ...env };
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

  const gateway: RestartableGateway = {
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
    user: () => users.user(),
    superuser: () => users.superuser(),
    async close() {
      await stop();
      await pgdb?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  const users = testUsers(gateway, { user: 'deluser', admin: 'deladmin' });
  return gateway;
}
