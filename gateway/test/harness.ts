import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash, randomUUID } from 'node:crypto';
import { PGlite } from '@electric-sql/pglite';
import { Kysely, PGliteDialect } from 'kysely';
import pg from 'pg';
import request from 'supertest';
import express, { type Express } from 'express';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import type { GatewayContext } from '../src/context.js';
import { createContext, createLogger } from '../src/server.js';
import { migrateToLatest } from '../src/db/database.js';
import type { Database } from '../src/db/schema.js';
import { insertUser } from '../src/features/users/users.repository.js';
import type { AnyRoute } from '../src/http/route.js';

import { databaseKinds, type DbKind } from '@sluice/testing/postgres';

export { databaseKinds, type DbKind };

export interface TestUser {
  id: string;
  email: string;
  password: string;
  token: string;
  auth: { Authorization: string };
}

export interface TestGateway {
  app: Express;
  ctx: GatewayContext & { closeDb(): Promise<void> };
  routes: AnyRoute[];
  openapi: Record<string, unknown>;
  http: ReturnType<typeof request>;
  dataDir: string;
  /** A registered, logged-in user with a fresh e-mail address. */
  user(opts?: { email?: string; password?: string }): Promise<TestUser>;
  superuser(): Promise<TestUser>;
  login(email: string, password: string): Promise<string>;
  /** Mails written to the outbox, oldest first. */
  outbox(): { to: string; subject: string; text: string; token: string }[];
  /** Every response body this gateway sent and every log line it wrote (secret-leak scans). */
  recorded(): { bodies: string[]; logs: string[] };
  close(): Promise<void>;
}

/** A database of its own on the PostgreSQL server of SLUICE_TEST_DATABASE_URL, and how to drop it. */
export async function createPostgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const admin = process.env.SLUICE_TEST_DATABASE_URL as string;
  const name = `sluice_test_${randomUUID().replace(/-/g, '')}`;
  const client = new pg.Client({ connectionString: admin });
  await client.connect();
  await client.query(`create database ${name}`);
  await client.end();
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: admin });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}

/**
 * The settings every test gateway starts from: its data directory, cheap
 * password hashing, responses validated against the OpenAPI document, and
 * the background work off unless a test turns it on.
 */
export function testGatewayEnv(dataDir: string, databaseUrl?: string) {
  return {
    SLUICE_DATA_DIR: dataDir,
    SLUICE_BCRYPT_COST: '4',
    SLUICE_VALIDATE_RESPONSES: 'true',
    // Tests of the operator turn it on; the others test the API alone.
    SLUICE_EMBEDDED_OPERATOR: 'false',
    // Tests of warehouse tasks drive their schedulers' ticks themselves.
    SLUICE_SCHEDULER: 'false',
    LOG_LEVEL: process.env.SLUICE_TEST_LOG_LEVEL ?? 'silent',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  };
}

let counter = 0;

/**
 * Users made through a gateway's API: registered (or inserted as
 * superusers) with fresh e-mail addresses starting with `prefix.user` and
 * `prefix.admin`, then logged in. `gw` is read at each call, so a restarted
 * gateway's new `http` and `ctx` are the ones used.
 */
export function testUsers(
  gw: { readonly http: ReturnType<typeof request>; readonly ctx: GatewayContext },
  prefix: { user: string; admin: string } = { user: 'user', admin: 'admin' },
): Pick<TestGateway, 'user' | 'superuser' | 'login'> {
  const login = async (email: string, password: string) => {
    const res = await gw.http.post('/api/auth/jwt/login').type('form').send({ username: email, password });
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
    login,
    async user(opts = {}) {
      const email = opts.email ?? `${prefix.user}${++counter}-${randomUUID().slice(0, 6)}@example.com`;
      const password = opts.password ?? 'correct-horse-battery';
      const res = await gw.http.post('/api/auth/register').send({ email, password });
      if (res.status !== 201) throw new Error(`register failed: ${res.status} ${JSON.stringify(res.body)}`);
      return withToken(res.body.id, email, password, await login(email, password));
    },
    async superuser() {
      const email = `${prefix.admin}${++counter}-${randomUUID().slice(0, 6)}@example.com`;
      const password = 'admin-password-1';
      const u = await insertUser(gw.ctx.db, {
        email,
        hashed_password: await gw.ctx.passwords.hash(password),
        is_active: true,
        is_superuser: true,
        is_verified: true,
        active_env_id: null,
        tokens_valid_after: null,
      });
      return withToken(u.id, email, password, await login(email, password));
    },
  };
}

/**
 * A migrated PGlite data directory, dumped once per machine and migration set
 * (a file in the temporary directory, named by a hash of the migrations and
 * the PGlite version) and loaded by every PGlite gateway of the suite: a new
 * initdb takes 5–10 s on two busy cores, loading the dump about 1 s.
 */
async function pgliteTemplate(): Promise<Blob> {
  const migrationsDirs = [
    '../src/db/migrations',
    '../../shared/src/cluster/migrations',
    '../../shared/src/secrets/migrations',
  ].map((d) => join(import.meta.dirname, d));
  const hash = createHash('sha256');
  const pglitePackage = join(import.meta.dirname, '../../node_modules/@electric-sql/pglite/package.json');
  hash.update(String(JSON.parse(readFileSync(pglitePackage, 'utf8')).version));
  for (const dir of migrationsDirs)
    for (const f of readdirSync(dir).sort()) hash.update(f).update(readFileSync(join(dir, f)));
  const file = join(tmpdir(), `sluice-pglite-template-${hash.digest('hex').slice(0, 16)}.tar`);
  if (existsSync(file)) return new Blob([readFileSync(file)]);
  const pglite = await PGlite.create('memory://');
  const db = new Kysely<Database>({ dialect: new PGliteDialect({ pglite }) });
  await migrateToLatest(db);
  const dump = await pglite.dumpDataDir('none');
  await db.destroy();
  // Written aside and renamed: a parallel worker never reads half a file.
  const partial = `${file}.${process.pid}.${randomUUID()}`;
  writeFileSync(partial, Buffer.from(await dump.arrayBuffer()), { mode: 0o600 });
  renameSync(partial, file);
  return dump;
}

export async function startTestGateway(
  kind: DbKind,
  env: Record<string, string> = {},
  opts: { pgliteOnDisk?: boolean } = {},
): Promise<TestGateway> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-test-'));
  const pgdb = kind === 'postgres' ? await createPostgresDatabase() : undefined;
  const config = loadConfig({ ...testGatewayEnv(dataDir, pgdb?.url), ...env });
  // Logs are kept in memory at debug level (and printed when SLUICE_TEST_LOG_LEVEL asks for it), so
  // that the leak scans read every line the gateway wrote.
  const logs: string[] = [];
  const bodies: string[] = [];
  const printLogs = Boolean(process.env.SLUICE_TEST_LOG_LEVEL);
  const sink = {
    write(line: string) {
      logs.push(line);
      if (printLogs) process.stdout.write(line);
    },
  };
  const ctx = await createContext(
    config,
    createLogger(env.LOG_LEVEL ?? process.env.SLUICE_TEST_LOG_LEVEL ?? 'debug', sink),
    // In memory, from the migrated template (pgliteTemplate); on disk (`<dataDir>/pgdata`, as
    // `make run` keeps it) only for the tests of its files.
    opts.pgliteOnDisk
      ? {}
      : { pgliteDir: 'memory://', ...(pgdb ? {} : { pgliteLoad: await pgliteTemplate() }) },
  );
  const built = buildApp(ctx);
  const { routes, openapi } = built;
  // The app as built, behind a recorder of every response body.
  const app = built.app;
  const recorder = express();
  recorder.use((_req, res, next) => {
    const chunks: Buffer[] = [];
    const write = res.write.bind(res) as (...a: unknown[]) => boolean;
    const end = res.end.bind(res) as (...a: unknown[]) => typeof res;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (chunk) chunks.push(Buffer.from(chunk as string));
      return write(chunk, ...rest);
    }) as typeof res.write;
    res.end = ((chunk: unknown, ...rest: unknown[]) => {
      if (chunk && typeof chunk !== 'function') chunks.push(Buffer.from(chunk as string));
      bodies.push(Buffer.concat(chunks).toString('utf8'));
      return end(chunk, ...rest);
    }) as typeof res.end;
    next();
  });
  recorder.use(app);
  const http = request(recorder);

  return {
    app,
    ctx,
    routes,
    openapi,
    http,
    dataDir,
    ...testUsers({ http, ctx }),
    outbox() {
      const dir = join(dataDir, 'outbox');
      let files: string[];
      try {
        files = readdirSync(dir).sort();
      } catch {
        return [];
      }
      return files.map((f) => JSON.parse(readFileSync(join(dir, f), 'utf8')));
    },
    recorded: () => ({ bodies, logs }),
    async close() {
      await ctx.closeDb();
      await pgdb?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
