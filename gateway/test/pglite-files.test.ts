import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import { startTestGateway, type TestGateway } from './harness.js';

// The embedded database's files (`make run` keeps them in <data dir>/pgdata)
// hold password hashes and sealed secrets: owner-only, like a PostgreSQL
// server's data directory, including files PGlite creates while it runs.

/** Every path under `dir` (itself included) whose mode lets anyone but the owner in. */
function openToOthers(dir: string): string[] {
  const found: string[] = [];
  const walk = (path: string) => {
    const st = lstatSync(path);
    if (st.isSymbolicLink()) return;
    const mode = st.mode & 0o777;
    const want = st.isDirectory() ? 0o700 : 0o600;
    if (mode !== want) found.push(`${path.slice(dir.length) || '/'} ${mode.toString(8)}`);
    if (st.isDirectory()) for (const name of readdirSync(path)) walk(join(path, name));
  };
  walk(dir);
  return found;
}

describe('PGlite data directory on disk', () => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway('pglite', {}, { pgliteOnDisk: true });
  });
  afterAll(() => gw.close());

  it('is owner-only once started: directories 0700, files 0600', () => {
    const pgdata = join(gw.dataDir, 'pgdata');
    expect(readdirSync(pgdata).length).toBeGreaterThan(5);
    expect(openToOthers(pgdata)).toEqual([]);
    expect(lstatSync(gw.dataDir).mode & 0o777).toBe(0o700);
  });

  it('stays owner-only as the database grows: files PGlite creates later are 0600 too', async () => {
    const pgdata = join(gw.dataDir, 'pgdata');
    const before = new Set(filesUnder(pgdata));
    const owner = await gw.user();
    for (let i = 0; i < 30; i++) {
      const env = await gw.http
        .post('/api/envs/')
        .set(owner.auth)
        .send({ name: `files-${i}` });
      expect(env.status).toBe(201);
      await gw.user();
    }
    // New relation files, as a migration of a later release would create them.
    await sql`create table file_mode_probe (id int primary key, v text)`.execute(gw.ctx.db);
    await sql`insert into file_mode_probe select g, repeat('x', 200) from generate_series(1, 5000) g`.execute(
      gw.ctx.db,
    );
    await sql`checkpoint`.execute(gw.ctx.db);
    const created = filesUnder(pgdata).filter((f) => !before.has(f));
    expect(created.length).toBeGreaterThan(0);
    expect(openToOthers(pgdata)).toEqual([]);
  });
});

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  );
}
