import { afterAll, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { WarehouseResource } from '@sluice/shared/catalog';
import { closeScanned, SECRETS, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';
import {
  HTTP_PATH,
  WAREHOUSE_ID,
  createWarehouse,
  startStandIn,
  warehouseEnv,
  type DatabricksStandIn,
} from './warehouse-fixtures.js';

/**
 * Warehouses (spec 2.12, 3.3) against the Databricks stand-in over
 * TLS. Every rule of the issue has a test here; the leak scan of closeScanned
 * proves no token reached a response or a log line.
 */
describe.each(databaseKinds())('warehouses on %s', (kind) => {
  let gw: TestGateway;
  let t: TeamSetup;
  let standIn: DatabricksStandIn;

  beforeAll(async () => {
    standIn = await startStandIn();
    gw = await startTestGateway(kind, warehouseEnv(standIn));
    t = await setupTeam(gw, 'wh');
  });
  afterAll(async () => {
    await standIn.close();
    await closeScanned(gw);
  });
  beforeEach(() => standIn.clearLog());

  const get = (id: string) => gw.http.get(`/api/warehouses/${id}`).set(t.owner.auth);
  const stored = async (id: string) => {
    const w = await gw.ctx.catalog.get<WarehouseResource>('Warehouse', id);
    const secret = await gw.ctx.secretStore.get(gw.ctx.config.namespace, `sluice-warehouse-${id}`);
    return { spec: w?.spec, status: w?.status, rv: w?.metadata.resourceVersion, secret: secret?.data };
  };

  describe('create and read', () => {
    it('creates a Draft warehouse without calling the engine; a pasted URL becomes the host; the token reads <redacted>', async () => {
      const res = await gw.http
        .post('/api/warehouses/')
        .set(t.member.auth)
        .send({
          name: 'analytics',
          team_id: t.teamId,
          server_hostname: `https://${standIn.host}/?o=1234567890#sql/warehouses`,
          http_path: HTTP_PATH,
          access_token: SECRETS.warehouseToken,
          catalog: 'main',
          schema: 'sales',
        });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({
        name: 'analytics',
        team_id: t.teamId,
        team_name: 'wh-team',
        server_hostname: standIn.host,
        http_path: HTTP_PATH,
        warehouse_id: WAREHOUSE_ID,
        access_token: '<redacted>',
        catalog: 'main',
        schema: 'sales',
        status: 'Draft',
        status_message: null,
        tested_at: null,
      });
      expect(standIn.requests).toEqual([]);
      // Encrypted at rest in the managed secret; the resource holds a reference only.
      const s = await stored(res.body.id);
      expect(s.secret).toEqual({ access_token: SECRETS.warehouseToken });
      expect(JSON.stringify(s.spec)).not.toContain(SECRETS.warehouseToken);
      expect(s.spec).toMatchObject({
        accessToken: {
          valueFrom: { secretKeyRef: { name: `sluice-warehouse-${res.body.id}`, key: 'access_token' } },
        },
      });
      expect((await get(res.body.id)).body).toEqual(res.body);
    });

    it('refuses a cluster HTTP path with a clear 422, and reports every invalid setting at once', async () => {
      const res = await gw.http.post('/api/warehouses/').set(t.owner.auth).send({
        name: 'bad',
        team_id: t.teamId,
        server_hostname: 'not a host',
        http_path: '/sql/protocolv1/o/1234567890123456/0123-456789-abcdefgh',
        access_token: SECRETS.warehouseToken,
        catalog: 'bad.name',
        schema: 'x y',
      });
      expect(res.status).toBe(422);
      const byField = Object.fromEntries(
        (res.body.detail as { loc: string[]; msg: string }[]).map((d) => [d.loc[1], d.msg]),
      );
      expect(byField.http_path).toMatch(/HTTP path of a cluster.*\/sql\/1\.0\/warehouses\/<warehouse id>/);
      expect(byField.server_hostname).toMatch(/server hostname/);
      expect(byField.catalog).toMatch(/letters, digits, underscores and hyphens/);
      expect(byField.schema).toMatch(/letters, digits, underscores and hyphens/);
    });

    it.each([
      ['a missing HTTP path', { http_path: undefined }, 'http_path', /Field required/],
      ['a missing name', { name: undefined }, 'name', /Field required/],
      ['a missing token', { access_token: undefined }, 'access_token', /Field required/],
      ['a schema without a catalog', { catalog: undefined }, 'schema', /needs a catalog/],
      [
        'another kind of path',
        { http_path: '/sql/2.0/things/x' },
        'http_path',
        /HTTP path of a SQL warehouse/,
      ],
    ])('refuses %s (422)', async (_l, change, field, msg) => {
      const body: Record<string, unknown> = {
        name: 'w',
        team_id: t.teamId,
        server_hostname: standIn.host,
        http_path: HTTP_PATH,
        access_token: SECRETS.warehouseToken,
        catalog: 'main',
        schema: 'sales',
        ...change,
      };
      for (const [k, v] of Object.entries(body)) if (v === undefined) delete body[k];
      const res = await gw.http.post('/api/warehouses/').set(t.owner.auth).send(body);
      expect(res.status).toBe(422);
      const issue = (res.body.detail as { loc: string[]; msg: string }[]).find((d) => d.loc[1] === field);
      expect(issue?.msg).toMatch(msg);
    });

    it('refuses a duplicate name in the team (409), and callers outside the team (403)', async () => {
      const w = await createWarehouse(gw, t.owner, t.teamId, standIn);
      const dup = await gw.http.post('/api/warehouses/').set(t.owner.auth).send({
        name: w.name,
        team_id: t.teamId,
        server_hostname: standIn.host,
        http_path: HTTP_PATH,
        access_token: 'x',
      });
      expect(dup.status).toBe(409);
      const outsider = await gw.http.post('/api/warehouses/').set(t.outsider.auth).send({
        name: 'mine',
        team_id: t.teamId,
        server_hostname: standIn.host,
        http_path: HTTP_PATH,
        access_token: 'x',
      });
      expect(outsider.status).toBe(403);
      expect(typeof outsider.body.detail).toBe('string');
      expect((await gw.http.get(`/api/warehouses/${w.id}`).set(t.outsider.auth)).status).toBe(403);
      expect((await gw.http.get(`/api/warehouses/${w.id}`).set(t.member.auth)).status).toBe(200);
    });

    it('lists warehouses by page, filtered by team, status and name; outsiders see none', async () => {
      const other = (await gw.http.post('/api/teams/').set(t.owner.auth).send({ name: 'wh-list-team' })).body
        .id;
      for (let i = 0; i < 3; i++) await createWarehouse(gw, t.owner, other, standIn, { name: `list-${i}` });
      const page = await gw.http.get(`/api/warehouses/?team_id=${other}&size=2`).set(t.owner.auth);
      expect(page.status).toBe(200);
      expect(page.body).toMatchObject({ total: 3, page: 1, size: 2, pages: 2 });
      expect(page.body.items.map((w: { name: string }) => w.name)).toEqual(['list-0', 'list-1']);
      const page2 = await gw.http.get(`/api/warehouses/?team_id=${other}&size=2&page=2`).set(t.owner.auth);
      expect(page2.body.items.map((w: { name: string }) => w.name)).toEqual(['list-2']);
      const search = await gw.http.get(`/api/warehouses/?team_id=${other}&search=IST-1`).set(t.owner.auth);
      expect(search.body.total).toBe(1);
      const live = await gw.http.get(`/api/warehouses/?team_id=${other}&status=Live`).set(t.owner.auth);
      expect(live.body.total).toBe(0);
      const none = await gw.http.get('/api/warehouses/').set(t.outsider.auth);
      expect(none.body.items).toEqual([]);
      expect((await gw.http.get(`/api/warehouses/?team_id=${other}`).set(t.outsider.auth)).status).toBe(403);
    });
  });

  describe('the connection test (spec 2.12, 3.3)', () => {
    it('makes exactly the three read-only calls in order, and the warehouse goes Live', async () => {
      const w = await createWarehouse(gw, t.owner, t.teamId, standIn);
      standIn.clearLog();
      const res = await gw.http.post(`/api/warehouses/${w.id}/test`).set(t.member.auth);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status: 'Live', status_message: null });
      expect(Date.parse(res.body.tested_at)).toBeGreaterThan(Date.now() - 60_000);
      expect(standIn.requests).toEqual([
        { method: 'GET', path: `/api/2.0/sql/warehouses/${WAREHOUSE_ID}`, auth: 'valid' },
        { method: 'GET', path: '/api/2.1/unity-catalog/catalogs/main', auth: 'valid' },
        { method: 'GET', path: '/api/2.1/unity-catalog/schemas/main.sales', auth: 'valid' },
      ]);
      const { status } = await stored(w.id);
      expect(status).toMatchObject({
        state: 'Live',
        conditions: [expect.objectContaining({ type: 'Ready', status: 'True' })],
      });
    });

    it.each([
      [
        'a missing warehouse',
        { http_path: '/sql/1.0/warehouses/0000000000000000' },
        /RESOURCE_DOES_NOT_EXIST/,
        1,
      ],
      [
        'a missing catalog',
        { catalog: 'nothing', schema: null },
        /Catalog "nothing" does not exist.*CATALOG_DOES_NOT_EXIST/,
        2,
      ],
      [
        'a missing schema',
        { schema: 'nothing' },
        /Schema "main.nothing" does not exist.*SCHEMA_DOES_NOT_EXIST/,
        3,
      ],
      [
        'a bad token',
        { access_token: 'dapi-not-the-token' },
        /access token.*403 403: Invalid access token\./,
        1,
      ],
    ])(
      'goes Error on %s, with the engine’s message, and stops at the failing call',
      async (_l, settings, message, calls) => {
        const w = await createWarehouse(gw, t.owner, t.teamId, standIn, settings);
        standIn.clearLog();
        const res = await gw.http.post(`/api/warehouses/${w.id}/test`).set(t.owner.auth);
        expect(res.status).toBe(200);
        expect(res.body.status).toBe('Error');
        expect(res.body.status_message).toMatch(message);
        expect(standIn.requests).toHaveLength(calls);
        // A re-run that passes moves it back to Live (3.3: Error → Live).
      },
    );

    it('moves Error → Live when a re-run passes (after the engine changed)', async () => {
      const w = await createWarehouse(gw, t.owner, t.teamId, standIn, { catalog: 'later', schema: null });
      expect((await gw.http.post(`/api/warehouses/${w.id}/test`).set(t.owner.auth)).body.status).toBe(
        'Error',
      );
      standIn.options.catalogs.later = { schemas: [] };
      const res = await gw.http.post(`/api/warehouses/${w.id}/test`).set(t.owner.auth);
      expect(res.body).toMatchObject({ status: 'Live', status_message: null });
      delete standIn.options.catalogs.later;
    });

    it('refuses internal addresses by the outbound policy, without a byte sent', async () => {
      const w = await createWarehouse(gw, t.owner, t.teamId, standIn, { server_hostname: '169.254.169.254' });
      const res = await gw.http.post(`/api/warehouses/${w.id}/test`).set(t.owner.auth);
      expect(res.body.status).toBe('Error');
      expect(res.body.status_message).toMatch(/169\.254\.169\.254 are not allowed/);
      expect(standIn.requests).toEqual([]);
    });

    it('lets only members of the team test (403 otherwise)', async () => {
      const w = await createWarehouse(gw, t.owner, t.teamId, standIn);
      const res = await gw.http.post(`/api/warehouses/${w.id}/test`).set(t.stranger.auth);
      expect(res.status).toBe(403);
      expect(standIn.requests).toEqual([]);
    });
  });

  describe('updates', () => {
    it('saves a rename without a test and keeps the status', async () => {
      const w = await createWarehouse(gw, t.owner, t.teamId, standIn);
      await gw.http.post(`/api/warehouses/${w.id}/test`).set(t.owner.auth);
      standIn.clearLog();
      const res = await gw.http
        .patch(`/api/warehouses/${w.id}`)
        .set(t.owner.auth)
        .send({ name: `${w.name}-renamed` });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        name: `${w.name}-renamed`,
        status: 'Live',
        access_token: '<redacted>',
      });
      expect(standIn.requests).toEqual([]);
    });

    it.each([
      [
        'a catalog that does not exist',
        { catalog: 'nothing', schema: null },
        'catalog',
        /CATALOG_DOES_NOT_EXIST/,
      ],
      ['a schema that does not exist', { schema: 'nothing' }, 'schema', /SCHEMA_DOES_NOT_EXIST/],
      [
        'a token the engine refuses',
        { access_token: SECRETS.warehouseToken2 },
        'access_token',
        /Invalid access token/,
      ],
      [
        'a warehouse path that does not exist',
        { http_path: '/sql/1.0/warehouses/ffff000000000000' },
        'http_path',
        /RESOURCE_DOES_NOT_EXIST/,
      ],
      [
        'an unreachable host',
        // A new hostname needs the token again (docs/security.md).
        { server_hostname: '127.0.0.1:1', access_token: SECRETS.warehouseToken },
        'server_hostname',
        /refused the connection/,
      ],
    ])('refuses %s with the engine’s message, and changes nothing', async (_l, change, field, msg) => {
      const w = await createWarehouse(gw, t.owner, t.teamId, standIn);
      await gw.http.post(`/api/warehouses/${w.id}/test`).set(t.owner.auth);
      const before = await get(w.id);
      const storedBefore = await stored(w.id);
      const res = await gw.http
        .patch(`/api/warehouses/${w.id}`)
        .set(t.owner.auth)
        .send({ name: 'ignored', ...change });
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual([
        { loc: ['body', field], msg: expect.stringMatching(msg), type: 'connection_test_failed' },
      ]);
      expect((await get(w.id)).body).toEqual(before.body);
      expect(await stored(w.id)).toEqual(storedBefore);
    });

    it('re-tests with the stored token when <redacted> is sent back, and saves a change that passes', async () => {
      const w = await createWarehouse(gw, t.owner, t.teamId, standIn, { schema: null });
      standIn.clearLog();
      const res = await gw.http
        .patch(`/api/warehouses/${w.id}`)
        .set(t.member.auth)
        .send({ schema: 'default', access_token: '<redacted>', server_hostname: `https://${standIn.host}/` });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ schema: 'default', status: 'Live', access_token: '<redacted>' });
      expect(standIn.calls()).toEqual([
        `GET /api/2.0/sql/warehouses/${WAREHOUSE_ID}`,
        'GET /api/2.1/unity-catalog/catalogs/main',
        'GET /api/2.1/unity-catalog/schemas/main.default',
      ]);
      expect(standIn.requests.every((r) => r.auth === 'valid')).toBe(true);
      expect((await stored(w.id)).secret).toEqual({ access_token: SECRETS.warehouseToken });
    });

    it('keeps the stored token when another setting is edited, and takes a new one that passes', async () => {
      const w = await createWarehouse(gw, t.owner, t.teamId, standIn);
      const edited = await gw.http
        .patch(`/api/warehouses/${w.id}`)
        .set(t.owner.auth)
        .send({ catalog: 'main', schema: 'default' });
      expect(edited.status).toBe(200);
      expect((await stored(w.id)).secret).toEqual({ access_token: SECRETS.warehouseToken });
      // The engine's token is rotated: the new one passes the test and replaces the old.
      const rotated = await startStandIn({ token: SECRETS.warehouseToken2 });
      const gw2Host = rotated.host;
      try {
        // The stand-ins share the CA, so the gateway trusts this one too.
        const res = await gw.http
          .patch(`/api/warehouses/${w.id}`)
          .set(t.owner.auth)
          .send({ server_hostname: gw2Host, access_token: SECRETS.warehouseToken2 });
        expect(res.status).toBe(200);
        expect(res.body).toMatchObject({
          server_hostname: gw2Host,
          status: 'Live',
          access_token: '<redacted>',
        });
        expect((await stored(w.id)).secret).toEqual({ access_token: SECRETS.warehouseToken2 });
        expect(rotated.requests.every((r) => r.auth === 'valid')).toBe(true);
      } finally {
        await rotated.close();
      }
    });

    it('clears the schema with null without a catalog change, and refuses a schema once the catalog is cleared', async () => {
      const w = await createWarehouse(gw, t.owner, t.teamId, standIn);
      const res = await gw.http.patch(`/api/warehouses/${w.id}`).set(t.owner.auth).send({ catalog: null });
      expect(res.status).toBe(422);
      expect(res.body.detail[0]).toMatchObject({
        loc: ['body', 'schema'],
        msg: 'A default schema needs a catalog',
      });
      const ok = await gw.http
        .patch(`/api/warehouses/${w.id}`)
        .set(t.owner.auth)
        .send({ catalog: null, schema: null });
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ catalog: null, schema: null, status: 'Live' });
    });

    it('lets only members of the team edit (403, nothing changed)', async () => {
      const w = await createWarehouse(gw, t.owner, t.teamId, standIn);
      const res = await gw.http
        .patch(`/api/warehouses/${w.id}`)
        .set(t.outsider.auth)
        .send({ name: 'taken-over' });
      expect(res.status).toBe(403);
      expect((await get(w.id)).body.name).toBe(w.name);
    });
  });

  describe('statements', () => {
    let id: string;
    beforeAll(async () => {
      id = (await createWarehouse(gw, t.owner, t.teamId, standIn)).id;
    });

    it('relays a statement and returns its rows, at most row_limit of them', async () => {
      standIn.clearLog();
      const res = await gw.http
        .post(`/api/warehouses/${id}/statements`)
        .set(t.member.auth)
        .send({ statement: 'SELECT * FROM range(25)', row_limit: 10 });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        state: 'SUCCEEDED',
        timed_out: false,
        error: null,
        columns: [{ name: 'id', type: 'BIGINT' }],
        row_count: 10,
        truncated: true,
      });
      expect(res.body.rows[0]).toEqual(['0']);
      expect(standIn.requests).toEqual([
        expect.objectContaining({
          method: 'POST',
          path: '/api/2.0/sql/statements',
          body: expect.objectContaining({
            statement: 'SELECT * FROM range(25)',
            warehouse_id: WAREHOUSE_ID,
            catalog: 'main',
            schema: 'sales',
            disposition: 'INLINE',
            format: 'JSON_ARRAY',
            row_limit: 10,
          }),
        }),
      ]);
    });

    it('caps the row limit at the server setting', async () => {
      const res = await gw.http
        .post(`/api/warehouses/${id}/statements`)
        .set(t.owner.auth)
        .send({ statement: 'SELECT * FROM range(2000)', row_limit: 100000 });
      expect(res.body.row_count).toBe(1000);
      expect(res.body.truncated).toBe(true);
    });

    it('answers a failed statement with state FAILED and the engine’s error', async () => {
      const res = await gw.http
        .post(`/api/warehouses/${id}/statements`)
        .set(t.owner.auth)
        .send({ statement: 'SELECT * FROM missing_table' });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        state: 'FAILED',
        rows: [],
        error: { code: 'BAD_REQUEST', sql_state: '42P01' },
      });
      expect(res.body.error.message).toMatch(/TABLE_OR_VIEW_NOT_FOUND/);
    });

    it('cancels a slow statement at its deadline', async () => {
      standIn.clearLog();
      const res = await gw.http
        .post(`/api/warehouses/${id}/statements`)
        .set(t.owner.auth)
        .send({ statement: 'SELECT 1 /* duration_ms=60000 */', timeout_s: 1 });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ state: 'CANCELED', timed_out: true, rows: [] });
      expect(res.body.error.message).toMatch(/did not finish within 1 s and was cancelled/);
      expect(standIn.calls().at(-1)).toBe(`POST /api/2.0/sql/statements/${res.body.statement_id}/cancel`);
    });

    it('answers 502 with the engine’s words when the engine refuses the token', async () => {
      const w = await createWarehouse(gw, t.owner, t.teamId, standIn, { access_token: 'dapi-revoked' });
      const res = await gw.http
        .post(`/api/warehouses/${w.id}/statements`)
        .set(t.owner.auth)
        .send({ statement: 'SELECT 1' });
      expect(res.status).toBe(502);
      expect(res.body.detail).toMatch(/403 403: Invalid access token\./);
    });

    it('lets only members of the team submit (403, nothing sent)', async () => {
      standIn.clearLog();
      const res = await gw.http
        .post(`/api/warehouses/${id}/statements`)
        .set(t.outsider.auth)
        .send({ statement: 'SELECT 1' });
      expect(res.status).toBe(403);
      expect(standIn.requests).toEqual([]);
    });
  });

  it('deletes a warehouse with its tasks and its stored token', async () => {
    const w = await createWarehouse(gw, t.owner, t.teamId, standIn);
    const task = await gw.http
      .post(`/api/warehouses/${w.id}/tasks/`)
      .set(t.owner.auth)
      .send({ name: 'nightly', statement: 'SELECT 1', schedule: '0 2 * * *' });
    expect(task.status).toBe(201);
    expect((await gw.http.delete(`/api/warehouses/${w.id}`).set(t.outsider.auth)).status).toBe(403);
    expect((await gw.http.delete(`/api/warehouses/${w.id}`).set(t.member.auth)).status).toBe(204);
    expect((await get(w.id)).status).toBe(404);
    expect(await stored(w.id)).toEqual({
      spec: undefined,
      status: undefined,
      rv: undefined,
      secret: undefined,
    });
    const left = await gw.ctx.db
      .selectFrom('warehouse_tasks')
      .selectAll()
      .where('warehouse_id', '=', w.id)
      .execute();
    expect(left).toEqual([]);
  });
});
