import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'kysely';
import { databaseKinds, startTestGateway, type TestGateway, type TestUser } from './harness.js';

describe.each(databaseKinds())('environments on %s', (kind) => {
  let gw: TestGateway;
  let alice: TestUser;
  let bob: TestUser;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
    alice = await gw.user();
    bob = await gw.user();
  });
  afterAll(() => gw.close());

  const broker = {
    bootstrap_servers: 'kafka-1:9092,kafka-2:9092',
    security_protocol: 'SASL_SSL',
    sasl_mechanism: 'SCRAM-SHA-512',
    sasl_username: 'svc',
    sasl_password: 's3cret-broker-pass',
  };

  it('creates an environment, makes the creator its admin and their active environment', async () => {
    const res = await gw.http
      .post('/api/envs/')
      .set(alice.auth)
      .send({ name: 'prod', description: 'Production' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      name: 'prod',
      description: 'Production',
      use_retention: false,
      retention_configuration: null,
    });
    const me = await gw.http.get('/api/users/me').set(alice.auth);
    expect(me.body.active_env_id).toBe(res.body.id);
    const second = await gw.http.post('/api/envs/').set(alice.auth).send({ name: 'staging' });
    expect((await gw.http.get('/api/users/me').set(alice.auth)).body.active_env_id).toBe(res.body.id);
    const list = await gw.http.get('/api/envs/').set(alice.auth);
    expect(list.status).toBe(200);
    expect(list.body).toMatchObject({ total: 2, page: 1, size: 50, pages: 1 });
    expect(list.body.items.map((e: { id: string }) => e.id).sort()).toEqual(
      [res.body.id, second.body.id].sort(),
    );
  });

  it('stores broker credentials encrypted and never returns them', async () => {
    const res = await gw.http
      .post('/api/envs/')
      .set(alice.auth)
      .send({ name: 'with-broker', use_retention: true, retention_configuration: broker });
    expect(res.status).toBe(201);
    expect(res.body.retention_configuration).toEqual({ ...broker, sasl_password: '<redacted>' });
    expect(JSON.stringify(res.body)).not.toContain('s3cret-broker-pass');
    const raw = await sql<{
      row: string;
    }>`select row_to_json(e)::text as row from envs e where id = ${res.body.id}`.execute(gw.ctx.db);
    expect(raw.rows[0]?.row).not.toContain('s3cret-broker-pass');
    // Sending `<redacted>` back keeps the stored password; another field changes.
    const patched = await gw.http
      .patch(`/api/envs/${res.body.id}`)
      .set(alice.auth)
      .send({ retention_configuration: { ...broker, sasl_password: '<redacted>', sasl_username: 'svc2' } });
    expect(patched.status).toBe(200);
    expect(patched.body.retention_configuration.sasl_username).toBe('svc2');
    const sealed = await gw.ctx.db
      .selectFrom('envs')
      .select('broker_secret')
      .where('id', '=', res.body.id)
      .executeTakeFirstOrThrow();
    expect(gw.ctx.secrets.open(sealed.broker_secret as string)).toBe('s3cret-broker-pass');
    const exported = await gw.http.get(`/api/envs/${res.body.id}`).set(alice.auth);
    expect(exported.body.retention_configuration.sasl_password).toBe('<redacted>');
  });

  it('validates broker settings with locations', async () => {
    const bad = await gw.http
      .post('/api/envs/')
      .set(alice.auth)
      .send({
        name: 'bad-broker',
        retention_configuration: { bootstrap_servers: 'no port', security_protocol: 'SASL_SSL' },
      });
    expect(bad.status).toBe(422);
    expect(bad.body.detail.map((d: { loc: unknown[] }) => d.loc)).toContainEqual([
      'body',
      'retention_configuration',
      'bootstrap_servers',
    ]);
    const sasl = await gw.http
      .post('/api/envs/')
      .set(alice.auth)
      .send({
        name: 'bad-sasl',
        retention_configuration: { bootstrap_servers: 'k:9092', security_protocol: 'SASL_SSL' },
      });
    expect(sasl.status).toBe(422);
    expect(sasl.body.detail[0].loc).toEqual(['body', 'retention_configuration', 'sasl_mechanism']);
    const noBroker = await gw.http
      .post('/api/envs/')
      .set(alice.auth)
      .send({ name: 'retention-without-broker', use_retention: true });
    expect(noBroker.status).toBe(422);
    const list = await gw.http.get('/api/envs/filter-one?name=bad-sasl').set(alice.auth);
    expect(list.status).toBe(404);
  });

  it('refuses a duplicate name with 409', async () => {
    await gw.http.post('/api/envs/').set(alice.auth).send({ name: 'dup' });
    const again = await gw.http.post('/api/envs/').set(bob.auth).send({ name: 'dup' });
    expect(again.status).toBe(409);
    expect(typeof again.body.detail).toBe('string');
  });

  it('replays an Idempotency-Key retry and refuses the key with another body', async () => {
    const key = 'env-key-1';
    const first = await gw.http
      .post('/api/envs/')
      .set(alice.auth)
      .set('Idempotency-Key', key)
      .send({ name: 'idem' });
    const retry = await gw.http
      .post('/api/envs/')
      .set(alice.auth)
      .set('Idempotency-Key', key)
      .send({ name: 'idem' });
    expect(first.status).toBe(201);
    expect(retry.status).toBe(201);
    expect(retry.body).toEqual(first.body);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    const other = await gw.http
      .post('/api/envs/')
      .set(alice.auth)
      .set('Idempotency-Key', key)
      .send({ name: 'idem-2' });
    expect(other.status).toBe(422);
    expect(other.body.detail[0].loc).toEqual(['header', 'Idempotency-Key']);
    expect((await gw.http.get('/api/envs/filter-one?name=idem-2').set(alice.auth)).status).toBe(404);
    // Keys are per user: Bob's same key is a new request (and a name conflict).
    const bobs = await gw.http
      .post('/api/envs/')
      .set(bob.auth)
      .set('Idempotency-Key', key)
      .send({ name: 'idem' });
    expect(bobs.status).toBe(409);
  });

  it('enforces membership: outsiders 403, members read, only admins write, anonymous 401', async () => {
    const env = (await gw.http.post('/api/envs/').set(alice.auth).send({ name: 'private' })).body;
    expect((await gw.http.get(`/api/envs/${env.id}`)).status).toBe(401);
    expect((await gw.http.get(`/api/envs/${env.id}`).set(bob.auth)).status).toBe(403);
    expect((await gw.http.get('/api/envs/filter-one?name=private').set(bob.auth)).status).toBe(403);
    expect((await gw.http.patch(`/api/envs/${env.id}`).set(bob.auth).send({ name: 'x' })).status).toBe(403);
    expect((await gw.http.delete(`/api/envs/${env.id}`).set(bob.auth)).status).toBe(403);
    const bobList = await gw.http.get('/api/envs/').set(bob.auth);
    expect(bobList.body.items.map((e: { id: string }) => e.id)).not.toContain(env.id);
    // Bob joins through a team: he may read, not write.
    const team = (await gw.http.post(`/api/teams/?env_id=${env.id}`).set(alice.auth).send({ name: 't' }))
      .body;
    expect(
      (
        await gw.http
          .post(`/api/teams/${team.id}/members/bulk`)
          .set(alice.auth)
          .send({ members: [bob.id] })
      ).status,
    ).toBe(204);
    expect((await gw.http.get(`/api/envs/${env.id}`).set(bob.auth)).status).toBe(200);
    expect((await gw.http.patch(`/api/envs/${env.id}`).set(bob.auth).send({ name: 'x' })).status).toBe(403);
    expect((await gw.http.get(`/api/envs/${crypto.randomUUID()}`).set(bob.auth)).status).toBe(404);
  });

  it('updates and deletes an environment with its teams', async () => {
    const env = (await gw.http.post('/api/envs/').set(alice.auth).send({ name: 'temp' })).body;
    const team = (await gw.http.post(`/api/teams/?env_id=${env.id}`).set(alice.auth).send({ name: 'tt' }))
      .body;
    const renamed = await gw.http
      .patch(`/api/envs/${env.id}`)
      .set(alice.auth)
      .send({ name: 'temp2', description: 'd' });
    expect(renamed.body).toMatchObject({ name: 'temp2', description: 'd' });
    expect((await gw.http.delete(`/api/envs/${env.id}`).set(alice.auth)).status).toBe(204);
    expect((await gw.http.get(`/api/envs/${env.id}`).set(alice.auth)).status).toBe(404);
    expect((await gw.http.get(`/api/teams/${team.id}`).set(alice.auth)).status).toBe(404);
  });

  it('paginates with page and size and rejects sizes over 100', async () => {
    const page = await gw.http.get('/api/envs/?page=2&size=2').set(alice.auth);
    expect(page.status).toBe(200);
    expect(page.body.page).toBe(2);
    expect(page.body.size).toBe(2);
    expect(page.body.items.length).toBeLessThanOrEqual(2);
    const big = await gw.http.get('/api/envs/?size=101').set(alice.auth);
    expect(big.status).toBe(422);
    expect(big.body.detail[0].loc).toEqual(['query', 'size']);
  });
});
