import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Admin, type Producer } from '@platformatic/kafka';
import pg from 'pg';
import { describeWithKafka, testKafkaBrokers, testKafkaSecurity } from '@sluice/testing/kafka';
import { newProducer } from '@sluice/testing/kafka-helpers';
import { createConnector, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { startTestGateway, type TestGateway } from './harness.js';
import { closeChecked, closedPort, poster, startPreflightGateway } from './preflight-fixtures.js';

// Pre-flight checks (spec 4.5) against the real systems: the test broker of
// scripts/with-kafka.sh (PLAINTEXT and SASL listeners), the PostgreSQL server
// of scripts/with-postgres.sh (a role of its own with a password, checked by
// SCRAM), and a local HTTP server for the webhook. The gateway may reach
// 127.0.0.1 only through an explicit allow (SLUICE_OUTBOUND_ALLOW_CIDRS): its
// default policy denies loopback, private and link-local addresses.

const run = randomUUID().slice(0, 8);
const PG_PASSWORD = `pg-preflight-s3cret-${run}`;
const WRONG = `wrong-s3cret-${run}`;
const WEBHOOK_TOKEN = `hook-token-s3cret-${run}`;

const startGateway = startPreflightGateway;

describe('pre-flight checks: shapes, unsupported types, webhook', () => {
  let gw: TestGateway;
  let t: TeamSetup;
  let hook: Server;
  let hookUrl: string;
  const seen: { method: string; headers: IncomingHttpHeaders }[] = [];

  beforeAll(async () => {
    gw = await startGateway();
    t = await setupTeam(gw, 'preflight-hook');
    hook = createServer((req, res) => {
      seen.push({ method: req.method ?? '', headers: req.headers });
      if (req.headers.authorization !== `Bearer ${WEBHOOK_TOKEN}`) res.writeHead(401).end();
      else res.writeHead(req.method === 'POST' ? 200 : 405).end();
    });
    await new Promise<void>((r) => hook.listen(0, '127.0.0.1', r));
    hookUrl = `http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`;
  });
  afterAll(async () => {
    await new Promise<void>((r) => hook.close(() => r()));
    await closeChecked(gw, [WEBHOOK_TOKEN, WRONG]);
  });

  const post = poster(
    () => gw,
    () => t,
  );

  it('lists every pre-flight path of the spec in the OpenAPI document', () => {
    const paths = Object.keys(gw.openapi.paths as object);
    for (const p of [
      '/connector-types/kafka-source/check-credentials',
      '/connector-types/kafka-source/fetch-messages',
      '/connector-types/kafka-source/list-topics',
      '/connector-types/oracle-target/check-credentials',
      '/connector-types/postgres-source/list-tables',
      '/connector-types/mongo-source/list-collections',
      '/connector-types/snowflake-target/warehouses',
      '/connector-types/webhook-target/check-credentials',
      '/envs/check-byok-credentials',
    ]) {
      expect(paths).toContain(p);
    }
  });

  it('answers 501 in the error shape for a type this version cannot check', async () => {
    const ibmi = await post('ibmi-source/check-credentials', {});
    expect(ibmi.status).toBe(501);
    expect(ibmi.body).toEqual({
      detail: 'check-credentials of IBMI_SOURCE is not supported by this version of Sluice',
    });
    const mssql = await post('mssql-source/list-tables', {});
    expect(mssql.status).toBe(501);
    expect(mssql.body.detail).toMatch(/not supported by this version of Sluice/);
  });

  it('needs a token', async () => {
    const res = await gw.http
      .post('/api/connector-types/webhook-target/check-credentials')
      .send({ url: hookUrl });
    expect(res.status).toBe(401);
  });

  it('refuses an invalid configuration with located 422 items', async () => {
    const res = await post('webhook-target/check-credentials', { url: 'not a url', auth_type: 'nope' });
    expect(res.status).toBe(422);
    const locs = (res.body.detail as { loc: unknown[] }[]).map((d) => d.loc);
    expect(locs).toEqual(
      expect.arrayContaining([
        ['body', 'url'],
        ['body', 'auth_type'],
      ]),
    );
    const redacted = await post('webhook-target/check-credentials', {
      url: hookUrl,
      auth_type: 'bearer',
      bearer_token: '<redacted>',
    });
    expect(redacted.status).toBe(422);
    expect(redacted.body.detail[0].loc).toEqual(['body', 'bearer_token']);
    expect(redacted.body.detail[0].msg).toMatch(/connector_id/);
    // A header name outside the token pattern is refused with its value unchecked, not a 500.
    const badHeader = await post('webhook-target/check-credentials', {
      url: hookUrl,
      headers: { 'not a token': ['x', 1] },
    });
    expect(badHeader.status).toBe(422);
    expect(badHeader.body.detail[0].loc).toEqual(['body', 'headers', 'not a token']);
  });

  it('checks a webhook with a HEAD request and sends no row', async () => {
    seen.length = 0;
    const good = await post('webhook-target/check-credentials', {
      url: hookUrl,
      auth_type: 'bearer',
      bearer_token: WEBHOOK_TOKEN,
    });
    expect(good.status).toBe(200);
    expect(good.body).toMatchObject({ ok: true, details: { status: 405 } });
    expect(good.body.message).toMatch(/reachable/);
    const bad = await post('webhook-target/check-credentials', {
      url: hookUrl,
      auth_type: 'bearer',
      bearer_token: WRONG,
    });
    expect(bad.body).toMatchObject({ ok: false, details: { status: 401 } });
    expect(bad.body.message).toMatch(/refused the credentials/);
    expect(seen.map((s) => s.method)).toEqual(['HEAD', 'HEAD']);
  });

  it('uses the stored secret of ?connector_id= for a <redacted> value; 403 outside the team, 404 unknown', async () => {
    const c = await createConnector(gw, t.owner, t.teamId, `hook-${run}`, 'WEBHOOK_TARGET', {
      url: hookUrl,
      auth_type: 'bearer',
      bearer_token: WEBHOOK_TOKEN,
    });
    const body = { url: hookUrl, auth_type: 'bearer', bearer_token: '<redacted>' };
    const res = await post(`webhook-target/check-credentials?connector_id=${c.id}`, body, t.member.auth);
    expect(res.status).toBe(200);
    expect(res.body.ok).toBe(true);
    const empty = await post(`webhook-target/check-credentials?connector_id=${c.id}`, {});
    expect(empty.body.ok).toBe(true);
    const outsider = await post(
      `webhook-target/check-credentials?connector_id=${c.id}`,
      body,
      t.outsider.auth,
    );
    expect(outsider.status).toBe(403);
    const unknown = await post(`webhook-target/check-credentials?connector_id=${randomUUID()}`, body);
    expect(unknown.status).toBe(404);
    const otherType = await post(`postgres-target/check-credentials?connector_id=${c.id}`, {});
    expect(otherType.status).toBe(400);
    expect(otherType.body.detail).toMatch(/WEBHOOK_TARGET/);
  });

  it('refuses references to another object’s managed secret', async () => {
    const res = await post('webhook-target/check-credentials', {
      url: hookUrl,
      auth_type: 'bearer',
      bearer_token: {
        valueFrom: { secretKeyRef: { name: `sluice-connector-${randomUUID()}`, key: 'bearer_token' } },
      },
    });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].msg).toMatch(/not granted to this team/);
  });

  it('denies the metadata address and fails fast on a closed port', async () => {
    const denied = await post('webhook-target/check-credentials', {
      url: 'http://169.254.169.254/latest/meta-data',
    });
    expect(denied.body).toEqual({
      ok: false,
      message: expect.stringMatching(/169\.254\.169\.254 are not allowed/),
    });
    const started = Date.now();
    const closed = await post('webhook-target/check-credentials', {
      url: `http://127.0.0.1:${await closedPort()}/hook`,
    });
    expect(closed.body).toEqual({ ok: false, message: expect.stringMatching(/Connection refused/) });
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

describeWithKafka('pre-flight checks of a Kafka source (real broker)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const security = testKafkaSecurity();
  const topic = `preflight-${run}`;
  let gw: TestGateway;
  let t: TeamSetup;
  let admin: Admin;
  let producer: Producer<string, string, string, string>;

  beforeAll(async () => {
    gw = await startGateway();
    t = await setupTeam(gw, 'preflight-kafka');
    admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
    await admin.createTopics({ topics: [topic], partitions: 2, replicas: 1 });
    producer = newProducer(brokers);
    // One send each, a few ms apart: "the most recent" is then well defined across partitions.
    for (let i = 0; i < 15; i++) {
      await producer.send({
        messages: [
          { topic, key: `k${i}`, value: i === 14 ? 'not json' : JSON.stringify({ n: i }), partition: i % 2 },
        ],
      });
      await new Promise((r) => setTimeout(r, 5));
    }
  });
  afterAll(async () => {
    await producer?.close();
    await admin?.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin?.close();
    await closeChecked(gw, [security?.password ?? '', WRONG]);
  });

  const post = poster(
    () => gw,
    () => t,
    'kafka-source/',
  );
  const plain = () => ({ bootstrap_servers: brokers.join(','), topic });
  const sasl = (password: string) => ({
    bootstrap_servers: security!.saslPlaintextBrokers.join(','),
    topic,
    security_protocol: 'SASL_PLAINTEXT',
    sasl_mechanism: 'SCRAM-SHA-256',
    sasl_username: security!.username,
    sasl_password: password,
  });

  it('checks the credentials: plaintext, SASL, a wrong password', async () => {
    const ok = await post('check-credentials', { bootstrap_servers: brokers.join(',') });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({
      ok: true,
      message: expect.stringMatching(/Connected to the Kafka cluster/),
    });
    if (!security) return;
    const good = await post('check-credentials', sasl(security.password));
    expect(good.body.ok).toBe(true);
    const started = Date.now();
    const bad = await post('check-credentials', sasl(WRONG));
    expect(bad.status).toBe(200);
    expect(bad.body).toEqual({
      ok: false,
      message: expect.stringMatching(/refused the SASL login: check the user name, password and mechanism/),
    });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('fails fast and clearly on an unreachable host and a denied address', async () => {
    const started = Date.now();
    const closed = await post('check-credentials', { bootstrap_servers: `127.0.0.1:${await closedPort()}` });
    expect(closed.body).toEqual({
      ok: false,
      message: expect.stringMatching(/^Connection refused by 127\.0\.0\.1:\d+/),
    });
    expect(Date.now() - started).toBeLessThan(5_000);
    const denied = await post('check-credentials', { bootstrap_servers: '169.254.169.254:9092' });
    expect(denied.body).toEqual({
      ok: false,
      message: expect.stringMatching(/169\.254\.169\.254 are not allowed/),
    });
    const listDenied = await post('list-topics', { bootstrap_servers: '169.254.169.254:9092' });
    expect(listDenied.status).toBe(400);
    expect(listDenied.body.detail).toMatch(/not allowed/);
  });

  it('is denied 127.0.0.1 by the default policy', async () => {
    const strict = await startTestGateway('pglite');
    try {
      const u = await strict.user();
      const res = await strict.http
        .post('/api/connector-types/kafka-source/check-credentials')
        .set(u.auth)
        .send({ bootstrap_servers: brokers.join(',') });
      expect(res.body).toEqual({ ok: false, message: expect.stringMatching(/are not allowed/) });
    } finally {
      await strict.close();
    }
  });

  it('lists the topics', async () => {
    const res = await post('list-topics', plain());
    expect(res.status).toBe(200);
    expect(res.body.topics).toContainEqual({ name: topic, partitions: 2 });
    expect((res.body.topics as { name: string }[]).some((x) => x.name.startsWith('__'))).toBe(false);
  });

  it('fetches recent messages with an inline configuration (bounded)', async () => {
    const res = await post('fetch-messages', plain());
    expect(res.status).toBe(200);
    expect(res.body.topic).toBe(topic);
    const messages = res.body.messages as { key: string; value: unknown; partition: number }[];
    expect(messages).toHaveLength(10);
    expect(messages.map((m) => m.key).sort()).toEqual(
      Array.from({ length: 10 }, (_, i) => `k${i + 5}`).sort(),
    );
    expect(messages.find((m) => m.key === 'k13')?.value).toEqual({ n: 13 });
    expect(messages.find((m) => m.key === 'k14')?.value).toBe('not json');
    const missing = await post('fetch-messages', { ...plain(), topic: `missing-${run}` });
    expect(missing.status).toBe(400);
    expect(missing.body.detail).toMatch(/does not exist/);
  });

  it('fetches messages by {connectorId, source_topic} and {datamodelId} with the stored secret', async () => {
    const cfg = security ? sasl(security.password) : plain();
    const c = await createConnector(gw, t.owner, t.teamId, `kafka-${run}`, 'KAFKA_SOURCE', cfg);
    const byConnector = await post(
      'fetch-messages',
      { connectorId: c.id, source_topic: topic },
      t.member.auth,
    );
    expect(byConnector.status).toBe(200);
    expect(byConnector.body.messages).toHaveLength(10);
    const byDatamodel = await post('fetch-messages', { datamodelId: c.datamodel_ids[0] });
    expect(byDatamodel.status).toBe(200);
    expect(byDatamodel.body.topic).toBe(topic);
    expect(byDatamodel.body.messages).toHaveLength(10);
    const outsider = await post('fetch-messages', { datamodelId: c.datamodel_ids[0] }, t.outsider.auth);
    expect(outsider.status).toBe(403);
    const mixed = await post('fetch-messages', { datamodelId: c.datamodel_ids[0], source_topic: topic });
    expect(mixed.status).toBe(422);
    if (security) {
      const redacted = await post(`check-credentials?connector_id=${c.id}`, {
        ...cfg,
        sasl_password: '<redacted>',
      });
      expect(redacted.body.ok).toBe(true);
      const outsiderCheck = await post(
        `check-credentials?connector_id=${c.id}`,
        { ...cfg, sasl_password: '<redacted>' },
        t.outsider.auth,
      );
      expect(outsiderCheck.status).toBe(403);
    }
  });

  it('refuses a configuration without brokers (422)', async () => {
    const res = await post('check-credentials', { security_protocol: 'SASL_PLAINTEXT' });
    expect(res.status).toBe(422);
    const locs = (res.body.detail as { loc: unknown[] }[]).map((d) => d.loc);
    expect(locs).toEqual(
      expect.arrayContaining([
        ['body', 'bootstrap_servers'],
        ['body', 'sasl_username'],
      ]),
    );
    expect(locs).not.toContainEqual(['body', 'topic']);
  });

  it('checks the broker settings of an environment (BYOK)', async () => {
    const ok = await gw.http
      .post('/api/envs/check-byok-credentials')
      .set(t.owner.auth)
      .send({ bootstrap_servers: brokers.join(',') });
    expect(ok.status).toBe(200);
    expect(ok.body.ok).toBe(true);
    if (security) {
      const bad = await gw.http
        .post('/api/envs/check-byok-credentials')
        .set(t.owner.auth)
        .send({
          bootstrap_servers: security.saslPlaintextBrokers.join(','),
          security_protocol: 'SASL_PLAINTEXT',
          sasl_mechanism: 'PLAIN',
          sasl_username: security.username,
          sasl_password: WRONG,
        });
      expect(bad.body).toEqual({ ok: false, message: expect.stringMatching(/refused the SASL login/) });
    }
    const invalid = await gw.http.post('/api/envs/check-byok-credentials').set(t.owner.auth).send({});
    expect(invalid.status).toBe(422);
  });
});

const pgUrl = process.env.SLUICE_TEST_DATABASE_URL;
(pgUrl ? describe : describe.skip)('pre-flight checks of PostgreSQL (real server)', () => {
  const role = `pf_${run}`;
  const database = `pf_${run}`;
  let gw: TestGateway;
  let t: TeamSetup;
  let admin: pg.Client;
  let hbaFile: string;
  let hbaBefore: string;
  let host: string;
  let port: number;

  beforeAll(async () => {
    admin = new pg.Client({ connectionString: pgUrl });
    await admin.connect();
    const url = new URL(pgUrl as string);
    host = url.hostname;
    port = Number(url.port || 5432);
    await admin.query(`create role ${role} login replication password '${PG_PASSWORD}'`);
    await admin.query(`create database ${database} owner ${role}`);
    // The test server trusts local connections; this role alone must give its password (SCRAM).
    hbaFile = (await admin.query<{ hba_file: string }>('show hba_file')).rows[0]!.hba_file;
    hbaBefore = readFileSync(hbaFile, 'utf8');
    writeFileSync(
      hbaFile,
      `host all ${role} 127.0.0.1/32 scram-sha-256\nhost all ${role} ::1/128 scram-sha-256\n${hbaBefore}`,
    );
    await admin.query('select pg_reload_conf()');
    const db = new pg.Client({ host, port, database, user: role, password: PG_PASSWORD });
    await db.connect();
    await db.query(
      'create table public.orders (id bigint primary key, status text not null, total numeric(10,2))',
    );
    await db.query('create table public.notes (body text)');
    await db.end();
    gw = await startGateway();
    t = await setupTeam(gw, 'preflight-pg');
  });
  afterAll(async () => {
    if (hbaFile) {
      writeFileSync(hbaFile, hbaBefore);
      await admin.query('select pg_reload_conf()');
    }
    await admin.query(`drop database if exists ${database} with (force)`);
    await admin.query(`drop role if exists ${role}`);
    await admin.end();
    await closeChecked(gw, [PG_PASSWORD, WRONG]);
  });

  const post = poster(
    () => gw,
    () => t,
  );
  const cfg = (password = PG_PASSWORD) => ({
    host,
    port,
    database,
    user: role,
    password,
    ssl_mode: 'disable',
  });

  it('checks the credentials of a source and a target; a wrong password is refused', async () => {
    const source = await post('postgres-source/check-credentials', cfg());
    expect(source.status).toBe(200);
    expect(source.body.message).toMatch(/^Logged in to PostgreSQL/);
    expect(source.body.ok).toBe(true);
    const target = await post('postgres-target/check-credentials', cfg());
    expect(target.body.ok).toBe(true);
    const bad = await post('postgres-source/check-credentials', cfg(WRONG));
    expect(bad.body).toEqual({
      ok: false,
      message: `PostgreSQL at ${host}:${port} refused the login: check the user name and password (SQLSTATE 28P01)`,
    });
  });

  it('fails fast on a closed port and denies the metadata address', async () => {
    const started = Date.now();
    const closed = await post('postgres-target/check-credentials', { ...cfg(), port: await closedPort() });
    expect(closed.body).toEqual({ ok: false, message: expect.stringMatching(/^Connection refused by/) });
    expect(Date.now() - started).toBeLessThan(5_000);
    const denied = await post('postgres-target/check-credentials', { ...cfg(), host: '169.254.169.254' });
    expect(denied.body).toEqual({
      ok: false,
      message: expect.stringMatching(/169\.254\.169\.254 are not allowed/),
    });
  });

  it('lists the tables with their primary keys and fetches their columns', async () => {
    const tables = await post('postgres-source/list-tables', cfg());
    expect(tables.status).toBe(200);
    expect(tables.body.tables).toEqual([
      { name: 'public.notes', schema: 'public', table: 'notes', primary_key: [] },
      { name: 'public.orders', schema: 'public', table: 'orders', primary_key: ['id'] },
    ]);
    const schema = await post('postgres-source/fetch-schema', {
      ...cfg(),
      tables: ['public.orders', 'public.gone'],
    });
    expect(schema.status).toBe(200);
    expect(schema.body.tables).toEqual([
      {
        name: 'public.orders',
        exists: true,
        columns: [
          { name: 'id', type: 'bigint', nullable: false, primary_key: true },
          { name: 'status', type: 'text', nullable: false, primary_key: false },
          { name: 'total', type: 'numeric(10,2)', nullable: true, primary_key: false },
        ],
      },
      { name: 'public.gone', exists: false, columns: [] },
    ]);
    const wrong = await post('postgres-source/list-tables', cfg(WRONG));
    expect(wrong.status).toBe(400);
    expect(wrong.body.detail).toMatch(/refused the login/);
  });

  it('uses the stored password with ?connector_id=', async () => {
    const c = await createConnector(gw, t.owner, t.teamId, `pg-${run}`, 'POSTGRES_SOURCE', {
      ...cfg(),
      whitelist: ['public.orders'],
    });
    const res = await post(`postgres-source/fetch-schema?connector_id=${c.id}`, {}, t.member.auth);
    expect(res.status).toBe(200);
    expect(res.body.tables[0]).toMatchObject({ name: 'public.orders', exists: true });
    const check = await post(`postgres-source/check-credentials?connector_id=${c.id}`, {
      ...cfg(),
      password: '<redacted>',
    });
    expect(check.body.ok).toBe(true);
    const outsider = await post(
      `postgres-source/check-credentials?connector_id=${c.id}`,
      {},
      t.outsider.auth,
    );
    expect(outsider.status).toBe(403);
  });
});
