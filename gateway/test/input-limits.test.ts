import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { MAX_PAGE } from '@sluice/shared/schemas';
import { MAX_JSON_DEPTH } from '../src/http/input-limits.js';
import { closeScanned, configs, createConnector, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';

// What the HTTP layer holds every request to, whatever the route: NUL in any
// string that would reach the database, page bounds, JSON depth, 405 for a
// method a path does not have, the OpenAPI document's base path, and the
// body rules of writes (canonical JSON for Idempotency-Key, read-only fields
// on PATCH, the nested pipeline shape's error locations, field aliases).

/** `{"a":{"a":…}}` nested `depth` levels, as text (a client can send what JSON.stringify would refuse to build). */
const deepJson = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

const expect422 = (res: { status: number; body: { detail?: unknown } }, loc: unknown[], type?: string) => {
  expect(res.status).toBe(422);
  expect(res.body.detail).toEqual(
    expect.arrayContaining([expect.objectContaining({ loc, ...(type ? { type } : {}) })]),
  );
};

describe.each(databaseKinds())('input limits and body rules (%s)', (kind) => {
  let gw: TestGateway;
  let t: TeamSetup;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    t = await setupTeam(gw, 'limits');
  }, 120_000);
  afterAll(() => closeScanned(gw));

  describe('NUL (U+0000) never reaches the database', () => {
    it('refuses it in the login form with a 422 at the field, without any login', async () => {
      const res = await gw.http
        .post('/api/auth/jwt/login')
        .type('form')
        .send('username=alice%40example.com%00&password=x');
      expect422(res, ['body', 'username'], 'string_pattern_mismatch');
    });

    it('refuses it in names, filters, search and configuration keys, at their location', async () => {
      const o = t.owner.auth;
      expect422(await gw.http.post('/api/envs/').set(o).send({ name: 'a\u0000b' }), ['body', 'name']);
      expect422(await gw.http.post('/api/teams/').set(o).send({ name: 'x\u0000' }), ['body', 'name']);
      expect422(await gw.http.get('/api/teams/filter-one?name=a%00').set(o), ['query', 'name']);
      expect422(await gw.http.get('/api/envs/filter-one?name=%00').set(o), ['query', 'name']);
      expect422(await gw.http.get('/api/pipelines/?search=a%00b').set(o), ['query', 'search']);
      expect422(await gw.http.get('/api/connectors/?search=%00').set(o), ['query', 'search']);
      const res = await gw.http
        .post('/api/connectors/')
        .set(o)
        .send({
          name: 'nul-key',
          connector_type: 'KAFKA_SOURCE',
          team_id: t.teamId,
          json_configuration: { ...configs.kafkaSource('t'), 'k\u0000': 1 },
        });
      expect422(res, ['body', 'json_configuration', 'k\u0000']);
      const value = await gw.http
        .post('/api/smt/process_mapper')
        .set(o)
        .send({ table_name: 't', config: [{ key: 'a', path: 'a' }], message: { a: 'x\u0000' } });
      expect422(value, ['body', 'message', 'a']);
    });
  });

  describe('pages', () => {
    const listPaths = () =>
      gw.routes
        .filter((r) => r.method === 'get')
        .filter((r) => 'page' in ((r.query as unknown as { properties?: object })?.properties ?? {}))
        .map((r) => r.path);

    it('answers an absurd page or size on every list with a 422 at the parameter', async () => {
      const paths = listPaths();
      expect(paths.length).toBeGreaterThan(8);
      const failures: string[] = [];
      for (const path of paths) {
        const url = `/api${path.replace(/:[a-z_]+/g, '00000000-0000-4000-8000-000000000000')}`;
        for (const [q, loc] of [
          ['page=99999999999999999999', 'page'],
          ['page=Infinity', 'page'],
          [`page=${MAX_PAGE + 1}`, 'page'],
          ['size=100000000000000000000', 'size'],
          ['size=101', 'size'],
        ] as const) {
          const res = await gw.http.get(`${url}?${q}`).set(t.owner.auth);
          const ok =
            res.status === 422 &&
            (res.body.detail as { loc: unknown[] }[]).some((d) => d.loc[0] === 'query' && d.loc[1] === loc);
          if (!ok) failures.push(`${path}?${q}: ${res.status}`);
        }
      }
      expect(failures).toEqual([]);
    });

    it('answers the highest page with an empty page', async () => {
      const res = await gw.http.get(`/api/envs/?page=${MAX_PAGE}&size=100`).set(t.owner.auth);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ items: [], page: MAX_PAGE, size: 100 });
      expect(res.body.total).toBeGreaterThan(0);
    });
  });

  describe('JSON depth', () => {
    it(`refuses nesting deeper than ${MAX_JSON_DEPTH} levels with a 422, and accepts ${MAX_JSON_DEPTH}`, async () => {
      const o = t.owner.auth;
      const send = (path: string, body: string) =>
        gw.http.post(path).set(o).set('Content-Type', 'application/json').send(body);
      const connector = (config: string) =>
        `{"name":"deep","connector_type":"KAFKA_SOURCE","team_id":"${t.teamId}","json_configuration":${config}}`;
      const deep = deepJson(10_000);
      expect422(
        await send('/api/connectors/', connector(deep)),
        ['body', 'json_configuration', ...Array(63).fill('a')],
        'too_deep',
      );
      const mapper = `{"table_name":"t","config":[{"key":"a","path":"a"}],"message":${deep}}`;
      expect422(
        await send('/api/smt/process_mapper', mapper),
        ['body', 'message', ...Array(63).fill('a')],
        'too_deep',
      );
      const pipeline = await gw.http
        .post('/api/pipelines/')
        .set(o)
        .send({
          name: 'deep_preview',
          team_id: t.teamId,
          source_name: 'deep-src',
          source_type: 'KAFKA_SOURCE',
          source_config: configs.kafkaSource('deep'),
          target_name: 'deep-dst',
          target_type: 'KAFKA_TARGET',
          target_config: configs.kafkaTarget(),
        });
      expect(pipeline.status).toBe(201);
      const preview = await send(`/api/pipelines/${pipeline.body.id}/preview`, `{"messages":[${deep}]}`);
      expect(preview.status).toBe(422);
      expect(preview.body.detail[0].type).toBe('too_deep');
      // Exactly at the limit: the body itself is level 1, so its message may nest 63 more.
      const atLimit = `{"table_name":"t","config":[{"key":"a","path":"a"}],"message":${deepJson(MAX_JSON_DEPTH - 1)}}`;
      expect((await send('/api/smt/process_mapper', atLimit)).status).toBe(200);
    });
  });

  describe('methods and the OpenAPI document', () => {
    it('answers a method a path does not have with 405 and Allow, an unknown path with 404', async () => {
      const put = await gw.http.put('/api/envs/').set(t.owner.auth).send({});
      expect(put.status).toBe(405);
      expect(put.headers.allow).toBe('GET, HEAD, POST');
      expect(put.body).toEqual({ detail: 'Method Not Allowed' });
      const trace = await gw.http.delete('/api/healthchecks');
      expect(trace.status).toBe(405);
      expect(trace.headers.allow).toBe('GET, HEAD');
      // A fixed path has its own methods, though a route with a parameter would match it too.
      const fixed = await gw.http.patch('/api/teams/filter-one').set(t.owner.auth).send({});
      expect(fixed.status).toBe(405);
      expect(fixed.headers.allow).toBe('GET, HEAD');
      const bulk = await gw.http.options(`/api/teams/${t.teamId}/members/bulk`).set(t.owner.auth);
      expect(bulk.status).toBe(405);
      expect(bulk.headers.allow).toBe('POST');
      const options = await gw.http.options('/api/users/me').set(t.owner.auth);
      expect(options.status).toBe(405);
      expect(options.headers.allow).toBe('GET, HEAD, PATCH');
      const docs = await gw.http.post('/api/openapi.json');
      expect(docs.status).toBe(405);
      expect((await gw.http.put('/api/nothing-here')).status).toBe(404);
    });

    it('serves paths relative to the server /api, each of them routed there', async () => {
      const doc = (await gw.http.get('/api/openapi.json')).body;
      expect(doc.servers).toEqual([{ url: '/api' }]);
      const paths = Object.keys(doc.paths as object);
      expect(paths.filter((p) => p.startsWith('/api/'))).toEqual([]);
      const unrouted: string[] = [];
      for (const p of paths) {
        const method = Object.keys(doc.paths[p])[0] as 'get';
        const res = await gw.http[method](`/api${p.replace(/\{[a-z_]+\}/g, 'x')}`);
        if (res.status === 404 && res.body.detail === 'Not Found') unrouted.push(p);
      }
      expect(unrouted).toEqual([]);
      expect((await gw.http.get('/api/docs')).status).toBe(200);
    });

    it('documents the NUL rule on strings and keys as a pattern', () => {
      const schemas = (gw.openapi.components as { schemas: Record<string, Record<string, unknown>> }).schemas;
      const env = schemas.EnvCreate!.properties as Record<string, Record<string, unknown>>;
      expect(env.name!.pattern).toBe('^[^\\u0000]*$');
    });
  });

  describe('write bodies', () => {
    it('replays an Idempotency-Key for the same JSON with its keys in another order', async () => {
      const key = `canon-${kind}`;
      /** `POST /envs/` of `body` (JSON text sent as it is written, or an object) under the one key. */
      const create = (body: string | object) =>
        gw.http
          .post('/api/envs/')
          .set(t.owner.auth)
          .set('Idempotency-Key', key)
          .send(body)
          .set('Content-Type', 'application/json');
      const first = await create('{"name":"canon","description":"d","use_retention":false}');
      expect(first.status).toBe(201);
      const again = await create('{"use_retention":false,"description":"d","name":"canon"}');
      expect(again.status).toBe(201);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.body.id).toBe(first.body.id);
      const other = await create({ name: 'canon', description: 'other' });
      expect422(other, ['header', 'Idempotency-Key'], 'idempotency_key_reused');
    });

    it('locates a nested-shape pipeline error where the client put the field', async () => {
      const res = await gw.http
        .post('/api/pipelines/')
        .set(t.owner.auth)
        .send({
          name: 'nested_bad',
          team_id: t.teamId,
          state: 'draft',
          json_configuration: {
            source_name: 'nb-src',
            source_type: 'KAFKA_SOURCE',
            source_config: { bootstrap_servers: 'kafka-1:9092' },
            target_name: 'nb-dst',
            target_type: 'KAFKA_TARGET',
            target_config: configs.kafkaTarget(),
          },
        });
      expect422(res, ['body', 'json_configuration', 'source_config', 'topic']);
      expect(
        (res.body.detail as { loc: unknown[] }[]).filter((d) => d.loc[1] !== 'json_configuration'),
      ).toEqual([]);
    });

    it('accepts a read object sent back to PATCH, ignoring its read-only fields; unknown fields stay 422', async () => {
      const o = t.owner.auth;
      const source = await createConnector(
        gw,
        t.owner,
        t.teamId,
        'ro-src',
        'KAFKA_SOURCE',
        configs.kafkaSource('ro'),
      );
      const target = await createConnector(
        gw,
        t.owner,
        t.teamId,
        'ro-dst',
        'KAFKA_TARGET',
        configs.kafkaTarget(),
      );
      const sub = await gw.http
        .post('/api/subscriptions/')
        .set(o)
        .send({ datamodel_id: source.datamodel_ids[0], target_connector_id: target.id });
      expect(sub.status).toBe(201);
      const pipeline = await gw.http.post('/api/pipelines/').set(o).send({
        name: 'ro_pipe',
        team_id: t.teamId,
        existing_source_id: source.id,
        existing_target_id: target.id,
      });
      expect(pipeline.status).toBe(201);
      for (const path of [
        `/api/envs/${t.envId}`,
        `/api/teams/${t.teamId}`,
        `/api/connectors/${source.id}`,
        `/api/subscriptions/${sub.body.id}`,
        `/api/users/${t.owner.id}`,
      ]) {
        const read = await gw.http.get(path).set(o);
        expect(read.status).toBe(200);
        const back = await gw.http.patch(path).set(o).send(read.body);
        expect({ path, status: back.status, refused: back.status === 200 ? null : back.body }).toEqual({
          path,
          status: 200,
          refused: null,
        });
        expect(back.body.id).toBe(read.body.id);
        const unknown = await gw.http
          .patch(path)
          .set(o)
          .send({ ...read.body, no_such_field: 1 });
        expect422(unknown, ['body', 'no_such_field'], 'extra_forbidden');
      }
      // A pipeline's read holds both the existing connector ids and their trios, which a write may not
      // combine (spec 2.6): its read-only fields come back with what the client changes.
      const pipe = (await gw.http.get(`/api/pipelines/${pipeline.body.id}`).set(o)).body;
      const { id, state, version, team_name, created_at, updated_at } = pipe;
      const renamedPipe = await gw.http
        .patch(`/api/pipelines/${pipeline.body.id}`)
        .set(o)
        .send({ id, state, version, team_name, created_at, updated_at, name: 'ro_pipe_2' });
      expect(renamedPipe.status).toBe(200);
      expect(renamedPipe.body.name).toBe('ro_pipe_2');
      // A read-only field is ignored, not applied.
      const renamed = await gw.http
        .patch(`/api/teams/${t.teamId}`)
        .set(o)
        .send({ id: '00000000-0000-4000-8000-000000000000', created_at: '2000-01-01T00:00:00Z' });
      expect(renamed.status).toBe(200);
      expect(renamed.body.id).toBe(t.teamId);
      // Its type is still checked.
      expect422(await gw.http.patch(`/api/teams/${t.teamId}`).set(o).send({ id: 5 }), ['body', 'id']);
    });

    it('refuses a port above 65535 in broker lists before any client sees it', async () => {
      // The Kafka client threw from its socket handling for such a port, which ended the process.
      const o = t.owner.auth;
      for (const [path, body, loc] of [
        [
          '/api/connector-types/kafka-source/check-credentials',
          { bootstrap_servers: 'h:94272' },
          ['body', 'bootstrap_servers'],
        ],
        [
          '/api/envs/check-byok-credentials',
          { bootstrap_servers: '127.0.0.1:65536' },
          ['body', 'bootstrap_servers'],
        ],
        [
          '/api/envs/',
          { name: 'port', retention_configuration: { bootstrap_servers: 'a:1,b:99999' } },
          ['body', 'retention_configuration', 'bootstrap_servers'],
        ],
      ] as const) {
        expect422(await gw.http.post(path).set(o).send(body), [...loc]);
      }
      const fine = await gw.http
        .post('/api/envs/check-byok-credentials')
        .set(o)
        .send({ bootstrap_servers: '127.0.0.1:65535' });
      expect(fine.status).toBe(200);
    });

    it('accepts bootstrap_server as another name of bootstrap_servers in retention_configuration', async () => {
      const res = await gw.http
        .post('/api/envs/')
        .set(t.owner.auth)
        .send({
          name: 'alias',
          use_retention: true,
          retention_configuration: { bootstrap_server: 'k1:9092' },
        });
      expect(res.status).toBe(201);
      expect(res.body.retention_configuration).toMatchObject({ bootstrap_servers: 'k1:9092' });
      expect(res.body.retention_configuration).not.toHaveProperty('bootstrap_server');
      const both = await gw.http
        .post('/api/envs/')
        .set(t.owner.auth)
        .send({
          name: 'alias2',
          retention_configuration: { bootstrap_server: 'a:1', bootstrap_servers: 'b:2' },
        });
      expect(both.status).toBe(422);
      const byok = await gw.http
        .post('/api/envs/check-byok-credentials')
        .set(t.owner.auth)
        .send({ bootstrap_server: '127.0.0.1:1' });
      expect(byok.status).toBe(200);
    });
  });
});
