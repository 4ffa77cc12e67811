import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import type { ConnectorResource } from '@sluice/shared/catalog';
import { resolvedWorkerConfig } from '../src/connections/worker-configuration.js';
import { connectorWorkerConfig } from '../src/features/connectors/connectors.worker-config.js';
import { createConnector, type TeamSetup } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway, type TestUser } from './harness.js';
import { expectNothingLeaked } from './preflight-fixtures.js';
import type { RecordingListener } from './recording-listener.js';
import { secretNames, secretRef, startGrantSetup } from './secret-grant-fixtures.js';

// Who may reference which secret (docs/security.md, "Secret references"),
// through the HTTP API: a secret is usable only when granted to the team
// (or its environment), the control plane's never, another object's managed
// secret never; `GET /k8s-secrets` lists what the caller may use; webhook
// header values are secrets; a change of destination needs the credentials
// again. A local listener stands for the attacker's host: it must receive
// nothing from a refused request.

const run = Math.random().toString(36).slice(2, 8);
const PROD_PASSWORD = `teama-prod-s3cret-${run}`;
const KEYS_VALUE = `jwt-signing-key-${run}`;
const INLINE_TOKEN = `inline-bearer-${run}`;
const HEADER_KEY = `header-api-key-${run}`;
const ENV_VALUE = `env-granted-${run}`;
const ALL_SECRETS = [PROD_PASSWORD, KEYS_VALUE, INLINE_TOKEN, HEADER_KEY, ENV_VALUE];

describe.each(databaseKinds())('secret references on %s', (kind) => {
  let gw: TestGateway;
  let admin: TestUser;
  let a: TeamSetup;
  let b: TeamSetup;
  let hook: RecordingListener;
  let hookUrl: string;

  beforeAll(async () => {
    gw = await startTestGateway(kind, { SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128' });
    ({ admin, a, b, hook } = await startGrantSetup(gw, 'grant'));
    hookUrl = hook.url;
  }, 120_000);
  afterAll(async () => {
    await hook.close();
    await gw.close();
    expectNothingLeaked(gw, ALL_SECRETS);
  });

  const check = (body: object, auth: { Authorization: string }, query = '') =>
    gw.http.post(`/api/connector-types/webhook-target/check-credentials${query}`).set(auth).send(body);
  const bearer = (token: unknown) => ({ url: hookUrl, auth_type: 'bearer', bearer_token: token });
  const putSecret = (body: object) => gw.http.post('/api/k8s-secrets').set(admin.auth).send(body);

  it('refuses a secret nobody granted: a brand-new user checks nothing with it, and learns nothing of it', async () => {
    expect((await putSecret({ name: 'teama-prod-db', data: { password: PROD_PASSWORD } })).status).toBe(201);
    const newbie = await gw.user();
    const before = hook.received.length;
    const res = await check(bearer(secretRef('teama-prod-db', 'password')), newbie.auth);
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      {
        loc: ['body', 'bearer_token'],
        msg: expect.stringContaining('not granted to this team'),
        type: 'value_error',
      },
    ]);
    // The listener received nothing: no connection was made with the secret.
    expect(hook.received.length).toBe(before);
    // A secret that does not exist reads the same: no oracle of what exists.
    const missing = await check(bearer(secretRef('no-such-secret', 'password')), newbie.auth);
    expect(missing.status).toBe(422);
    expect(missing.body.detail[0].msg).toBe(
      (res.body.detail[0].msg as string).replace('teama-prod-db', 'no-such-secret'),
    );
    // Nor in a connector of a team it was not granted to.
    const create = await gw.http
      .post('/api/connectors/')
      .set(b.owner.auth)
      .send({
        name: `steal-${run}`,
        connector_type: 'WEBHOOK_TARGET',
        team_id: b.teamId,
        json_configuration: bearer(secretRef('teama-prod-db', 'password')),
      });
    expect(create.status).toBe(422);
    expect(create.body.detail[0].loc).toEqual(['body', 'json_configuration', 'bearer_token']);
    const stored = await gw.http.get(`/api/connectors/?team_id=${b.teamId}`).set(b.owner.auth);
    expect(stored.body.items).toEqual([]);
    expect(await secretNames(gw, newbie)).toEqual([]);
    expect(await secretNames(gw, a.member)).toEqual([]);
  });

  it('lists and lets use a secret once granted to the team, and only to that team', async () => {
    const granted = await putSecret({
      name: 'teama-prod-db',
      data: { password: PROD_PASSWORD },
      allowed_team_ids: [a.teamId],
    });
    expect(granted.status).toBe(201);
    expect(granted.body).toMatchObject({ allowed_team_ids: [a.teamId], allowed_env_ids: [] });
    const listed = (await gw.http.get('/api/k8s-secrets').set(a.member.auth)).body;
    expect(listed).toEqual([{ name: 'teama-prod-db', keys: ['password'], managed: false }]);
    expect(await secretNames(gw, b.owner)).toEqual([]);
    expect(await secretNames(gw, a.outsider)).toEqual([]);
    const superView = (await gw.http.get('/api/k8s-secrets').set(admin.auth)).body as {
      name: string;
      allowed_team_ids: string[];
    }[];
    expect(superView.find((s) => s.name === 'teama-prod-db')?.allowed_team_ids).toEqual([a.teamId]);

    const before = hook.received.length;
    const ok = await check(bearer(secretRef('teama-prod-db', 'password')), a.member.auth);
    expect(ok.status).toBe(200);
    expect(ok.body.ok).toBe(true);
    expect(hook.received.slice(before).map((r) => r.headers.authorization)).toEqual([
      `Bearer ${PROD_PASSWORD}`,
    ]);
    const c = await createConnector(gw, a.owner, a.teamId, `granted-${run}`, 'WEBHOOK_TARGET', {
      ...bearer(secretRef('teama-prod-db', 'password')),
    });
    expect(c.id).toEqual(expect.any(String));

    const refused = await check(bearer(secretRef('teama-prod-db', 'password')), b.owner.auth);
    expect(refused.status).toBe(422);
    // A connector cannot move to a team the secret is not granted to.
    const move = await gw.http.patch(`/api/connectors/${c.id}`).set(admin.auth).send({ team_id: b.teamId });
    expect(move.status).toBe(422);
    expect(move.body.detail[0].loc).toEqual(['body', 'json_configuration', 'bearer_token']);
  });

  it('grants by environment, and refuses ids that name nothing', async () => {
    expect(
      (await putSecret({ name: 'env-b-db', data: { token: ENV_VALUE }, allowed_env_ids: [b.envId] })).status,
    ).toBe(201);
    expect(await secretNames(gw, b.owner)).toContain('env-b-db');
    expect(await secretNames(gw, a.owner)).not.toContain('env-b-db');
    expect((await check(bearer(secretRef('env-b-db', 'token')), b.owner.auth)).status).toBe(200);
    expect((await check(bearer(secretRef('env-b-db', 'token')), a.owner.auth)).status).toBe(422);
    const bad = await putSecret({
      name: 'env-b-db',
      data: { token: ENV_VALUE },
      allowed_team_ids: ['00000000-0000-4000-8000-000000000000'],
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'allowed_team_ids', 0]);
  });

  it("never lets the control plane's secrets be used, even annotated for the team", async () => {
    await gw.ctx.secretStore.put(
      gw.ctx.config.namespace,
      'prod-sluice-keys',
      { 'jwt-secret': KEYS_VALUE },
      {
        labels: { 'sluice.dev/control-plane': 'true' },
        annotations: { 'sluice.dev/allowed-teams': a.teamId, 'sluice.dev/allowed-envs': a.envId },
      },
    );
    const before = hook.received.length;
    const res = await check(bearer(secretRef('prod-sluice-keys', 'jwt-secret')), a.owner.auth);
    expect(res.status).toBe(422);
    expect(res.body.detail[0].msg).toContain('not granted to this team');
    expect(hook.received.length).toBe(before);
    const sup = await check(bearer(secretRef('prod-sluice-keys', 'jwt-secret')), admin.auth);
    expect(sup.status).toBe(422);
    expect(await secretNames(gw, a.owner)).not.toContain('prod-sluice-keys');
    expect(await secretNames(gw, admin)).not.toContain('prod-sluice-keys');
    expect((await gw.http.delete('/api/k8s-secrets/prod-sluice-keys').set(admin.auth)).status).toBe(409);
  });

  it("refuses another object's managed secret and keeps an object's own usable", async () => {
    const victim = await createConnector(gw, a.owner, a.teamId, `victim-${run}`, 'WEBHOOK_TARGET', {
      ...bearer(INLINE_TOKEN),
    });
    const stolen = secretRef(`sluice-connector-${victim.id}`, 'bearer_token');
    const before = hook.received.length;
    const res = await check(bearer(stolen), a.owner.auth);
    expect(res.status).toBe(422);
    expect(res.body.detail[0].msg).toContain('not granted to this team');
    const thief = await gw.http
      .post('/api/connectors/')
      .set(a.owner.auth)
      .send({
        name: `thief-${run}`,
        connector_type: 'WEBHOOK_TARGET',
        team_id: a.teamId,
        json_configuration: bearer(stolen),
      });
    expect(thief.status).toBe(422);
    expect(hook.received.length).toBe(before);
    // Its own: `<redacted>` and the empty body of ?connector_id= use it.
    const own = await check({}, a.member.auth, `?connector_id=${victim.id}`);
    expect(own.status).toBe(200);
    expect(hook.received.at(-1)?.headers.authorization).toBe(`Bearer ${INLINE_TOKEN}`);
    const kept = await gw.http
      .patch(`/api/connectors/${victim.id}`)
      .set(a.owner.auth)
      .send({ json_configuration: bearer('<redacted>') });
    expect(kept.status).toBe(200);
  });

  it('stops a reference whose grant was taken away: pre-flight and worker alike (the upgrade rule)', async () => {
    await putSecret({ name: 'revoked-db', data: { token: ENV_VALUE }, allowed_team_ids: [a.teamId] });
    const c = await createConnector(gw, a.owner, a.teamId, `revoked-${run}`, 'WEBHOOK_TARGET', {
      ...bearer(secretRef('revoked-db', 'token')),
    });
    await putSecret({ name: 'revoked-db', data: { token: ENV_VALUE }, allowed_team_ids: [] });
    const before = hook.received.length;
    const res = await check({}, a.owner.auth, `?connector_id=${c.id}`);
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'bearer_token']);
    expect(hook.received.length).toBe(before);
    // What a worker, a preview or a backfill is given: not the value.
    const config = await connectorWorkerConfig(
      gw.ctx,
      { user: { is_superuser: true } } as never,
      c.id,
      'target',
    );
    await expect(resolvedWorkerConfig(gw.ctx, config)).rejects.toThrow(/revoked-db/);
  });

  it('treats webhook header values as secrets: redacted, sealed, referable, and sent', async () => {
    const c = await createConnector(gw, a.owner, a.teamId, `headers-${run}`, 'WEBHOOK_TARGET', {
      url: hookUrl,
      headers: { 'X-Api-Key': HEADER_KEY, 'X-Shared': secretRef('teama-prod-db', 'password') },
    });
    const read = await gw.http.get(`/api/connectors/${c.id}`).set(a.owner.auth);
    expect(read.body.json_configuration.headers).toEqual({
      'X-Api-Key': '<redacted>',
      'X-Shared': secretRef('teama-prod-db', 'password'),
    });
    const workerView = await gw.http.get(`/api/connectors/${c.id}/target-worker-config`).set(a.owner.auth);
    expect(workerView.status).toBe(200);
    expect(JSON.stringify(workerView.body)).not.toContain(HEADER_KEY);
    // Sealed at rest: neither the catalog nor the secret table holds the value in clear.
    for (const table of ['secrets', 'mirror_connectors']) {
      const rows = await sql<{
        row: string;
      }>`select row_to_json(t)::text as row from ${sql.table(table)} t`.execute(gw.ctx.db);
      expect(rows.rows.filter((r) => r.row.includes(HEADER_KEY))).toEqual([]);
    }
    const stored = await gw.ctx.catalog.get<ConnectorResource>('Connector', c.id);
    expect(JSON.stringify(stored)).not.toContain(HEADER_KEY);
    // The read sent back keeps them; a check sends them.
    const back = await gw.http
      .patch(`/api/connectors/${c.id}`)
      .set(a.owner.auth)
      .send({ json_configuration: read.body.json_configuration });
    expect(back.status).toBe(200);
    const before = hook.received.length;
    expect((await check({}, a.owner.auth, `?connector_id=${c.id}`)).status).toBe(200);
    const sent = hook.received.slice(before)[0]?.headers;
    expect(sent?.['x-api-key']).toBe(HEADER_KEY);
    expect(sent?.['x-shared']).toBe(PROD_PASSWORD);
    // The worker is given them (the process runtime resolves the same way).
    const config = await connectorWorkerConfig(
      gw.ctx,
      { user: { is_superuser: true } } as never,
      c.id,
      'target',
    );
    const resolved = await resolvedWorkerConfig(gw.ctx, config);
    expect(resolved.configuration.headers).toEqual({ 'X-Api-Key': HEADER_KEY, 'X-Shared': PROD_PASSWORD });
    // A header may not reference a secret the team is not granted.
    const bad = await gw.http
      .patch(`/api/connectors/${c.id}`)
      .set(a.owner.auth)
      .send({ json_configuration: { url: hookUrl, headers: { 'X-Bad': secretRef('env-b-db', 'token') } } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0].loc).toEqual(['body', 'json_configuration', 'headers', 'X-Bad']);
  });

  it('needs the credentials again when the destination changes', async () => {
    const c = await createConnector(gw, a.owner, a.teamId, `dest-${run}`, 'WEBHOOK_TARGET', {
      ...bearer(INLINE_TOKEN),
      headers: { 'X-Api-Key': HEADER_KEY },
    });
    const evil = hookUrl.replace('/x', '/evil');
    const before = hook.received.length;
    const moved = await gw.http
      .patch(`/api/connectors/${c.id}`)
      .set(a.owner.auth)
      .send({
        json_configuration: {
          url: evil,
          auth_type: 'bearer',
          bearer_token: '<redacted>',
          headers: { 'X-Api-Key': '<redacted>' },
        },
      });
    expect(moved.status).toBe(422);
    expect(moved.body.detail.map((i: { loc: unknown }) => i.loc)).toEqual([
      ['body', 'json_configuration', 'headers', 'X-Api-Key'],
      ['body', 'json_configuration', 'bearer_token'],
    ]);
    expect(moved.body.detail[1].msg).toContain('bearer_token is required again because url changed');
    // Nothing changed.
    expect((await gw.http.get(`/api/connectors/${c.id}`).set(a.owner.auth)).body.json_configuration.url).toBe(
      hookUrl,
    );
    const checked = await check(
      { url: evil, auth_type: 'bearer', bearer_token: '<redacted>' },
      a.owner.auth,
      `?connector_id=${c.id}`,
    );
    expect(checked.status).toBe(422);
    expect(checked.body.detail[0].msg).toContain('required again because url changed');
    expect(hook.received.length).toBe(before);
    // Same destination: `<redacted>` keeps; a new destination with the values given is fine.
    const same = await gw.http
      .patch(`/api/connectors/${c.id}`)
      .set(a.owner.auth)
      .send({ json_configuration: { ...bearer('<redacted>'), headers: { 'X-Api-Key': '<redacted>' } } });
    expect(same.status).toBe(200);
    const given = await gw.http
      .patch(`/api/connectors/${c.id}`)
      .set(a.owner.auth)
      .send({ json_configuration: { url: evil, auth_type: 'bearer', bearer_token: INLINE_TOKEN } });
    expect(given.status).toBe(200);

    const pg = await createConnector(gw, a.owner, a.teamId, `pg-${run}`, 'POSTGRES_TARGET', {
      host: 'dwh.internal',
      database: 'dwh',
      user: 'loader',
      password: INLINE_TOKEN,
    });
    const pgMoved = await gw.http
      .patch(`/api/connectors/${pg.id}`)
      .set(a.owner.auth)
      .send({
        json_configuration: {
          host: 'attacker.example',
          database: 'dwh',
          user: 'loader',
          password: '<redacted>',
        },
      });
    expect(pgMoved.status).toBe(422);
    expect(pgMoved.body.detail[0]).toMatchObject({
      loc: ['body', 'json_configuration', 'password'],
      msg: expect.stringContaining('password is required again because host changed'),
    });
  });

  it("needs the environment's broker password again when its brokers change", async () => {
    const cfg = {
      bootstrap_servers: 'kafka-1.internal:9092',
      security_protocol: 'SASL_SSL',
      sasl_mechanism: 'PLAIN',
      sasl_username: 'platform',
      sasl_password: INLINE_TOKEN,
    };
    const env = await gw.http
      .post('/api/envs/')
      .set(a.owner.auth)
      .send({ name: `broker-${run}`, use_retention: true, retention_configuration: cfg });
    expect(env.status).toBe(201);
    const moved = await gw.http
      .patch(`/api/envs/${env.body.id as string}`)
      .set(a.owner.auth)
      .send({
        retention_configuration: {
          ...cfg,
          bootstrap_servers: 'attacker.example:9092',
          sasl_password: '<redacted>',
        },
      });
    expect(moved.status).toBe(422);
    expect(moved.body.detail[0]).toMatchObject({
      loc: ['body', 'retention_configuration', 'sasl_password'],
      msg: expect.stringContaining('required again because bootstrap_servers changed'),
    });
    const same = await gw.http
      .patch(`/api/envs/${env.body.id as string}`)
      .set(a.owner.auth)
      .send({ retention_configuration: { ...cfg, retention_ms: 1000, sasl_password: '<redacted>' } });
    expect(same.status).toBe(200);
  });

  it("needs a warehouse's token again when its hostname changes", async () => {
    const w = await gw.http
      .post('/api/warehouses/')
      .set(a.owner.auth)
      .send({
        name: `wh-${run}`,
        team_id: a.teamId,
        server_hostname: 'dbc-1.cloud.databricks.com',
        http_path: '/sql/1.0/warehouses/abcdef1234567890',
        access_token: INLINE_TOKEN,
      });
    expect(w.status).toBe(201);
    for (const body of [{ access_token: '<redacted>' }, {}]) {
      const res = await gw.http
        .patch(`/api/warehouses/${w.body.id as string}`)
        .set(a.owner.auth)
        .send({ server_hostname: 'attacker.example', ...body });
      expect(res.status).toBe(422);
      expect(res.body.detail[0]).toMatchObject({
        loc: ['body', 'access_token'],
        msg: expect.stringContaining('required again because server_hostname changed'),
      });
    }
  });
});
