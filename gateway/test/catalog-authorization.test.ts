import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import {
  SECRETS,
  configs,
  createConnector,
  closeScanned,
  setupTeam,
  type TeamSetup,
} from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway, type TestUser } from './harness.js';
import {
  HTTP_PATH,
  createWarehouse,
  startStandIn,
  warehouseEnv,
  type DatabricksStandIn,
} from './warehouse-fixtures.js';

/**
 * Write access on the owning team for every write, membership for
 * every read — as a matrix over every catalog route: the owner and a member
 * pass, an outsider of the team and a user of another environment get 403
 * with `{detail: string}` and change nothing, anonymous callers get 401.
 */

interface Fixture {
  source: string;
  target: string;
  datamodel: string;
  subscription: string;
  pipeline: string;
  sourceName: string;
  pipelineName: string;
  warehouse: string;
  task: string;
}

interface Call {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** Express path of the route, to prove the matrix covers the route table. */
  route: string;
  path: (f: Fixture) => string;
  body?: (f: Fixture, t: TeamSetup) => Record<string, unknown>;
}

const CALLS: Call[] = [
  { method: 'get', route: '/connectors/', path: () => '/connectors/' },
  { method: 'get', route: '/connectors/source-config', path: () => '/connectors/source-config' },
  { method: 'get', route: '/connectors/target-config', path: () => '/connectors/target-config' },
  {
    method: 'get',
    route: '/connectors/filter-one',
    path: (f) => `/connectors/filter-one?name=${f.sourceName}`,
  },
  { method: 'get', route: '/connectors/:id', path: (f) => `/connectors/${f.source}` },
  {
    method: 'get',
    route: '/connectors/:id/source-worker-config',
    path: (f) => `/connectors/${f.source}/source-worker-config`,
  },
  { method: 'get', route: '/connectors/:id/logs', path: (f) => `/connectors/${f.source}/logs` },
  {
    method: 'get',
    route: '/connectors/:id/target-worker-config',
    path: (f) => `/connectors/${f.target}/target-worker-config`,
  },
  {
    method: 'post',
    route: '/connectors/',
    path: () => '/connectors/',
    body: (_f, t) => ({
      name: `new-${Math.random().toString(36).slice(2, 8)}`,
      connector_type: 'KAFKA_SOURCE',
      json_configuration: configs.kafkaSource('authz-new'),
      team_id: t.teamId,
    }),
  },
  {
    method: 'patch',
    route: '/connectors/:id',
    path: (f) => `/connectors/${f.target}`,
    body: () => ({ name: 'authz-dst-renamed' }),
  },
  { method: 'post', route: '/connectors/:id/start', path: (f) => `/connectors/${f.target}/start` },
  { method: 'post', route: '/connectors/:id/stop', path: (f) => `/connectors/${f.target}/stop` },
  { method: 'get', route: '/datamodels/', path: () => '/datamodels/' },
  { method: 'get', route: '/datamodels/:id', path: (f) => `/datamodels/${f.datamodel}` },
  {
    method: 'get',
    route: '/datamodels/:id/monitoring',
    path: (f) => `/datamodels/${f.datamodel}/monitoring`,
  },
  { method: 'get', route: '/datamodels/:id/schema', path: (f) => `/datamodels/${f.datamodel}/schema` },
  {
    method: 'patch',
    route: '/datamodels/:id/error-table',
    path: (f) => `/datamodels/${f.datamodel}/error-table`,
    body: () => ({ error_table_enabled: false }),
  },
  { method: 'post', route: '/datamodels/:id/disable', path: (f) => `/datamodels/${f.datamodel}/disable` },
  { method: 'post', route: '/datamodels/:id/enable', path: (f) => `/datamodels/${f.datamodel}/enable` },
  { method: 'get', route: '/subscriptions/', path: () => '/subscriptions/' },
  { method: 'get', route: '/subscriptions/:id', path: (f) => `/subscriptions/${f.subscription}` },
  {
    method: 'post',
    route: '/subscriptions/',
    path: () => '/subscriptions/',
    body: (f) => ({ datamodel_id: f.datamodel, target_connector_id: f.target }),
  },
  {
    method: 'post',
    route: '/subscriptions/subscribe-all',
    path: () => '/subscriptions/subscribe-all',
    body: (f) => ({ datamodel_ids: [f.datamodel], target_connector_ids: [f.target] }),
  },
  {
    method: 'patch',
    route: '/subscriptions/:id',
    path: (f) => `/subscriptions/${f.subscription}`,
    body: () => ({ backfill: true }),
  },
  {
    method: 'post',
    route: '/subscriptions/:id/pause',
    path: (f) => `/subscriptions/${f.subscription}/pause`,
  },
  {
    method: 'post',
    route: '/subscriptions/:id/start',
    path: (f) => `/subscriptions/${f.subscription}/start`,
  },
  {
    method: 'post',
    route: '/subscriptions/:id/preview',
    path: (f) => `/subscriptions/${f.subscription}/preview`,
    body: () => ({ messages: [{ id: 1 }] }),
  },
  { method: 'get', route: '/pipelines/', path: () => '/pipelines/' },
  { method: 'get', route: '/pipelines/count-status', path: () => '/pipelines/count-status' },
  {
    method: 'get',
    route: '/pipelines/filter-one',
    path: (f) => `/pipelines/filter-one?name=${f.pipelineName}`,
  },
  { method: 'get', route: '/pipelines/status/all-non-draft', path: () => '/pipelines/status/all-non-draft' },
  { method: 'get', route: '/pipelines/:id', path: (f) => `/pipelines/${f.pipeline}` },
  { method: 'get', route: '/pipelines/:id/status', path: (f) => `/pipelines/${f.pipeline}/status` },
  {
    method: 'get',
    route: '/pipelines/:id/configuration',
    path: (f) => `/pipelines/${f.pipeline}/configuration`,
  },
  {
    method: 'get',
    route: '/pipelines/:id/worker-config',
    path: (f) => `/pipelines/${f.pipeline}/worker-config`,
  },
  {
    method: 'get',
    route: '/pipelines/:id/latency-informations',
    path: (f) => `/pipelines/${f.pipeline}/latency-informations`,
  },
  {
    method: 'post',
    route: '/pipelines/',
    path: () => '/pipelines/',
    body: (f, t) => ({
      name: `p-${Math.random().toString(36).slice(2, 8)}`,
      team_id: t.teamId,
      existing_source_id: f.source,
      existing_target_id: f.target,
    }),
  },
  {
    method: 'patch',
    route: '/pipelines/:id',
    path: (f) => `/pipelines/${f.pipeline}`,
    body: () => ({ subscription_backfill: true }),
  },
  {
    method: 'post',
    route: '/pipelines/:id/configuration',
    path: (f) => `/pipelines/${f.pipeline}/configuration`,
    body: (f, t) => ({ name: f.pipelineName, team_id: t.teamId, version: 1 }),
  },
  { method: 'post', route: '/pipelines/:id/start', path: (f) => `/pipelines/${f.pipeline}/start` },
  {
    // Sample messages: the preview maps them without reaching the source.
    method: 'post',
    route: '/pipelines/:id/preview',
    path: (f) => `/pipelines/${f.pipeline}/preview`,
    body: () => ({ messages: [{ id: 1 }] }),
  },
  { method: 'post', route: '/pipelines/:id/pause', path: (f) => `/pipelines/${f.pipeline}/pause` },
  { method: 'get', route: '/warehouses/', path: () => '/warehouses/' },
  { method: 'get', route: '/warehouses/:id', path: (f) => `/warehouses/${f.warehouse}` },
  {
    method: 'post',
    route: '/warehouses/',
    path: () => '/warehouses/',
    body: (_f, t) => ({
      name: `wh-${Math.random().toString(36).slice(2, 8)}`,
      team_id: t.teamId,
      server_hostname: 'adb-1234567890123456.7.azuredatabricks.net',
      http_path: HTTP_PATH,
      access_token: SECRETS.warehouseToken,
    }),
  },
  {
    method: 'patch',
    route: '/warehouses/:id',
    path: (f) => `/warehouses/${f.warehouse}`,
    body: () => ({ name: `wh-renamed-${Math.random().toString(36).slice(2, 8)}` }),
  },
  { method: 'post', route: '/warehouses/:id/test', path: (f) => `/warehouses/${f.warehouse}/test` },
  {
    method: 'post',
    route: '/warehouses/:id/statements',
    path: (f) => `/warehouses/${f.warehouse}/statements`,
    body: () => ({ statement: 'SELECT 1' }),
  },
  { method: 'get', route: '/warehouses/:id/tasks/', path: (f) => `/warehouses/${f.warehouse}/tasks/` },
  {
    method: 'post',
    route: '/warehouses/:id/tasks/',
    path: (f) => `/warehouses/${f.warehouse}/tasks/`,
    body: () => ({
      name: `t-${Math.random().toString(36).slice(2, 8)}`,
      statement: 'SELECT 1',
      schedule: '@daily',
    }),
  },
  {
    method: 'get',
    route: '/warehouses/:id/tasks/:task_id',
    path: (f) => `/warehouses/${f.warehouse}/tasks/${f.task}`,
  },
  {
    method: 'patch',
    route: '/warehouses/:id/tasks/:task_id',
    path: (f) => `/warehouses/${f.warehouse}/tasks/${f.task}`,
    body: () => ({ statement: 'SELECT 2' }),
  },
  {
    method: 'post',
    route: '/warehouses/:id/tasks/:task_id/pause',
    path: (f) => `/warehouses/${f.warehouse}/tasks/${f.task}/pause`,
  },
  {
    method: 'post',
    route: '/warehouses/:id/tasks/:task_id/resume',
    path: (f) => `/warehouses/${f.warehouse}/tasks/${f.task}/resume`,
  },
  {
    method: 'post',
    route: '/warehouses/:id/tasks/:task_id/run',
    path: (f) => `/warehouses/${f.warehouse}/tasks/${f.task}/run`,
  },
  {
    method: 'get',
    route: '/warehouses/:id/tasks/:task_id/runs',
    path: (f) => `/warehouses/${f.warehouse}/tasks/${f.task}/runs`,
  },
  // Deletes last: they end the fixture.
  {
    method: 'delete',
    route: '/warehouses/:id/tasks/:task_id',
    path: (f) => `/warehouses/${f.warehouse}/tasks/${f.task}`,
  },
  { method: 'delete', route: '/warehouses/:id', path: (f) => `/warehouses/${f.warehouse}` },
  { method: 'delete', route: '/pipelines/:id', path: (f) => `/pipelines/${f.pipeline}` },
  { method: 'delete', route: '/subscriptions/:id', path: (f) => `/subscriptions/${f.subscription}` },
  { method: 'delete', route: '/datamodels/:id', path: (f) => `/datamodels/${f.datamodel}` },
  { method: 'delete', route: '/connectors/:id', path: (f) => `/connectors/${f.target}` },
];

const CATALOG_TAGS = ['connectors', 'datamodels', 'subscriptions', 'pipelines', 'warehouses'];

describe.each(databaseKinds())('catalog authorization matrix on %s', (kind) => {
  let gw: TestGateway;
  let t: TeamSetup;
  let standIn: DatabricksStandIn;

  beforeAll(async () => {
    standIn = await startStandIn();
    gw = await startTestGateway(kind, warehouseEnv(standIn));
    t = await setupTeam(gw, 'authz');
  });
  afterAll(async () => {
    await standIn.close();
    await closeScanned(gw);
  });

  /** A source with two tables, a target, a subscription on the second table, and a pipeline on the first. */
  async function fixture(tag: string): Promise<Fixture> {
    const source = await createConnector(
      gw,
      t.owner,
      t.teamId,
      `authz-src${tag}`,
      'POSTGRES_SOURCE',
      configs.pgSource(['public.a', 'public.b']),
    );
    const target = await createConnector(
      gw,
      t.owner,
      t.teamId,
      `authz-dst${tag}`,
      'KAFKA_TARGET',
      configs.kafkaTarget(),
    );
    const dms = await gw.http.get(`/api/datamodels/?connector_id=${source.id}`).set(t.owner.auth);
    const [a, b] = dms.body.items as { id: string }[];
    const sub = await gw.http
      .post('/api/subscriptions/')
      .set(t.owner.auth)
      .send({ datamodel_id: b!.id, target_connector_id: target.id });
    const pipeline = await gw.http
      .post('/api/pipelines/')
      .set(t.owner.auth)
      .send({
        name: `authz${tag}`,
        team_id: t.teamId,
        existing_source_id: source.id,
        datamodel_source_topic: 'public.a',
        existing_target_id: target.id,
      });
    expect(pipeline.status).toBe(201);
    expect(a).toBeDefined();
    const warehouse = await createWarehouse(gw, t.owner, t.teamId, standIn);
    const task = await gw.http
      .post(`/api/warehouses/${warehouse.id}/tasks/`)
      .set(t.owner.auth)
      .send({ name: `authz${tag}`, statement: 'SELECT 1', schedule: '@hourly' });
    expect(task.status).toBe(201);
    return {
      warehouse: warehouse.id,
      task: task.body.id,
      source: source.id,
      target: target.id,
      datamodel: b!.id,
      subscription: sub.body.id,
      pipeline: pipeline.body.id,
      sourceName: source.name,
      pipelineName: pipeline.body.name,
    };
  }

  const send = (call: Call, f: Fixture, u?: TestUser) => {
    let req = gw.http[call.method](`/api${call.path(f)}`);
    if (u) req = req.set(u.auth);
    return call.body ? req.send(call.body(f, t)) : req;
  };

  it('covers every catalog route of the route table', () => {
    const routes = gw.routes
      // The type registry is public reference data, owned by no team.
      .filter((r) => CATALOG_TAGS.includes(r.tag) && r.path !== '/connector-types/')
      .map((r) => `${r.method} ${r.path}`);
    expect(CALLS.map((c) => `${c.method} ${c.route}`).sort()).toEqual([...routes].sort());
  });

  it('answers 401 to anonymous callers on every route', async () => {
    const f = await fixture('-anon');
    for (const call of CALLS) {
      const res = await send(call, f);
      if (res.status !== 401) throw new Error(`${call.method} ${call.route}: ${res.status}`);
    }
  });

  it.each([
    ['an outsider of the team', 'outsider'],
    ['a user of another environment', 'stranger'],
  ] as const)(
    'answers 403 {detail} to %s on every route with an object, changing nothing',
    async (_label, who) => {
      const f = await fixture(`-${who}`);
      const snapshot = async () => {
        const objects = await gw.ctx.cluster.list('Pipeline', gw.ctx.config.namespace);
        const all = await Promise.all(
          (['Connector', 'DataModel', 'Subscription', 'Pipeline', 'Warehouse'] as const).map((k) =>
            gw.ctx.cluster.list(k, gw.ctx.config.namespace),
          ),
        );
        return { rv: objects.resourceVersion, count: all.reduce((n, l) => n + l.items.length, 0) };
      };
      const before = await snapshot();
      for (const call of CALLS) {
        const res = await send(call, f, t[who]);
        const isList =
          call.method === 'get' && !call.route.includes(':id') && !call.route.includes('filter-one');
        if (isList) {
          // Lists answer 200 with only what the caller may see: nothing of this team.
          const items = Array.isArray(res.body.items) ? res.body.items : [];
          if (res.status !== 200 || (items.length > 0 && !call.route.includes('count')))
            throw new Error(
              `${call.method} ${call.route}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`,
            );
          continue;
        }
        const expected = call.route.includes('filter-one') ? 404 : 403;
        if (res.status !== expected || (expected === 403 && typeof res.body.detail !== 'string')) {
          throw new Error(
            `${call.method} ${call.route}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`,
          );
        }
      }
      expect(await snapshot()).toEqual(before);
    },
  );

  it.each([
    ['the owner', 'owner'],
    ['a member', 'member'],
  ] as const)('lets %s read and write on every route', async (_label, who) => {
    const f = await fixture(`-${who}`);
    for (const call of CALLS) {
      const res = await send(call, f, t[who]);
      // 409s are state or version answers (pause a draft, import an old version): past the permission check.
      if (!(res.status < 300 || res.status === 409)) {
        throw new Error(
          `${call.method} ${call.route}: ${res.status} ${JSON.stringify(res.body).slice(0, 200)}`,
        );
      }
    }
  });

  it('answers an unknown team_id in a body with 422 at that field, and creates or moves nothing', async () => {
    const f = await fixture('-unknown-team');
    const nowhere = '00000000-0000-4000-8000-0000000000ee';
    const requests: [string, () => ReturnType<typeof gw.http.post>][] = [
      [
        'POST /connectors/',
        () =>
          gw.http.post('/api/connectors/').send({
            name: 'nowhere-src',
            connector_type: 'KAFKA_SOURCE',
            json_configuration: configs.kafkaSource('nowhere'),
            team_id: nowhere,
          }),
      ],
      [
        'PATCH /connectors/{id}',
        () => gw.http.patch(`/api/connectors/${f.target}`).send({ team_id: nowhere }),
      ],
      [
        'POST /pipelines/',
        () =>
          gw.http.post('/api/pipelines/').send({
            name: 'nowhere',
            team_id: nowhere,
            existing_source_id: f.source,
            datamodel_source_topic: 'public.a',
            existing_target_id: f.target,
          }),
      ],
      [
        'PATCH /warehouses/{id}',
        () => gw.http.patch(`/api/warehouses/${f.warehouse}`).send({ team_id: nowhere }),
      ],
      [
        'POST /users/me/service-account-token',
        () => gw.http.post('/api/users/me/service-account-token').send({ team_id: nowhere }),
      ],
    ];
    for (const [operation, request] of requests) {
      const res = await request().set(t.owner.auth);
      expect([operation, res.status, res.body]).toEqual([
        operation,
        422,
        { detail: [{ loc: ['body', 'team_id'], msg: 'No such team', type: 'value_error' }] },
      ]);
    }
    expect((await gw.http.get(`/api/connectors/${f.target}`).set(t.owner.auth)).body.team_id).toBe(t.teamId);
    expect((await gw.http.get(`/api/warehouses/${f.warehouse}`).set(t.owner.auth)).body.team_id).toBe(
      t.teamId,
    );
    const named = await gw.http.get('/api/connectors/filter-one?name=nowhere-src').set(t.owner.auth);
    expect(named.status).toBe(404);
    // The same id in a query names the resource asked for: 404.
    expect((await gw.http.get(`/api/connectors/?team_id=${nowhere}`).set(t.owner.auth)).status).toBe(404);
  });
});
