import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import jwt from 'jsonwebtoken';
import type { Response } from 'supertest';
import { databaseKinds, startTestGateway, type TestGateway, type TestUser } from './harness.js';

const SELF_HOSTED_ONLY = /only available in SELF_HOSTED mode/;
const bearer = (token: string) => ({ Authorization: `Bearer ${token}` });

function expectForbidden(res: Response) {
  expect(res.status).toBe(403);
  expect(res.body).toEqual({ detail: expect.any(String) });
}
function expectUnauthorized(res: Response) {
  expect(res.status).toBe(401);
  expect(res.body).toEqual({ detail: 'Unauthorized' });
}
function expectLocs(res: Response, locs: (string | number)[][]) {
  expect(res.status).toBe(422);
  expect(res.body.detail.map((d: { loc: unknown[] }) => d.loc)).toEqual(locs);
  for (const d of res.body.detail) expect(typeof d.msg).toBe('string');
}

describe.each(databaseKinds())('organisation API keys (SELF_HOSTED) on %s', (kind) => {
  let gw: TestGateway;
  let root: TestUser;
  let alice: TestUser;
  let granted: { id: string };
  let other: { id: string };
  const createKey = (body: Record<string, unknown>, u: TestUser = root) =>
    gw.http.post('/api/api-keys').set(u.auth).send(body);
  const exchange = (api_key: unknown) => gw.http.post('/api/auth/api-key/token').send({ api_key });

  beforeAll(async () => {
    gw = await startTestGateway(kind);
    root = await gw.superuser();
    alice = await gw.user();
    granted = (await gw.http.post('/api/envs/').set(alice.auth).send({ name: 'granted' })).body;
    other = (await gw.http.post('/api/envs/').set(alice.auth).send({ name: 'other' })).body;
  });
  afterAll(() => gw.close());

  it('lets a superuser create a key, shown once with the psk_ prefix', async () => {
    const res = await createKey({ name: 'ci', env_ids: [granted.id] });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      name: 'ci',
      prefix: expect.any(String),
      env_ids: [granted.id],
      admin: false,
      created_at: expect.any(String),
      last_used_at: null,
      revoked: false,
      key: expect.stringMatching(/^psk_[A-Za-z0-9_-]{32,}$/),
    });
    expect(res.body.key.startsWith(res.body.prefix)).toBe(true);
    expect(res.body.prefix.length).toBeLessThan(res.body.key.length / 2);
    const list = await gw.http.get('/api/api-keys').set(root.auth);
    expect(list.status).toBe(200);
    const { key, ...shown } = res.body;
    expect(list.body).toContainEqual(shown);
    expect(JSON.stringify(list.body)).not.toContain(key);
    for (const k of list.body) expect(k.key).toBeUndefined();
    // Only its hash is stored.
    const stored = await gw.ctx.db.selectFrom('api_keys').selectAll().execute();
    expect(JSON.stringify(stored)).not.toContain(key);
  });

  it('is for superusers only', async () => {
    expectForbidden(await createKey({ name: 'mine', env_ids: [granted.id] }, alice));
    expectForbidden(await gw.http.get('/api/api-keys').set(alice.auth));
    const made = await createKey({ name: 'x', env_ids: [granted.id] });
    expectForbidden(await gw.http.delete(`/api/api-keys/${made.body.id}`).set(alice.auth));
    expect((await exchange(made.body.key)).status).toBe(200);
    expectUnauthorized(await gw.http.post('/api/api-keys').send({ name: 'anon', env_ids: [granted.id] }));
    expectUnauthorized(await gw.http.get('/api/api-keys'));
  });

  it('refuses unknown or malformed environments with 422 and their location', async () => {
    const ghost = randomUUID();
    const res = await createKey({ name: 'bad', env_ids: [granted.id, ghost] });
    expectLocs(res, [['body', 'env_ids', 1]]);
    const two = await createKey({ name: 'bad', env_ids: [randomUUID(), granted.id, randomUUID()] });
    expectLocs(two, [
      ['body', 'env_ids', 0],
      ['body', 'env_ids', 2],
    ]);
    expectLocs(await createKey({ name: 'bad', env_ids: ['not-a-uuid'] }), [['body', 'env_ids', 0]]);
    expectLocs(await createKey({ name: 'bad', env_ids: [] }), [['body', 'env_ids']]);
    expectLocs(await createKey({ env_ids: [granted.id] }), [['body', 'name']]);
    const list = await gw.http.get('/api/api-keys').set(root.auth);
    expect(list.body.map((k: { name: string }) => k.name)).not.toContain('bad');
  });

  it('exchanges a key for a 10-minute bearer token that reads the granted environments only', async () => {
    const made = (await createKey({ name: 'reader', env_ids: [granted.id] })).body;
    const res = await exchange(made.key);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ access_token: expect.any(String), token_type: 'bearer', expires_in: 600 });
    const claims = jwt.decode(res.body.access_token) as { iat: number; exp: number };
    expect(claims.exp - claims.iat).toBeGreaterThan(598);
    expect(claims.exp - claims.iat).toBeLessThanOrEqual(600);
    const token = bearer(res.body.access_token);
    const read = await gw.http.get(`/api/envs/${granted.id}`).set(token);
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: granted.id, name: 'granted' });
    expectForbidden(await gw.http.get(`/api/envs/${other.id}`).set(token));
    const list = await gw.http.get('/api/envs/').set(token);
    expect(list.status).toBe(200);
    expect(list.body.items.map((e: { id: string }) => e.id)).toEqual([granted.id]);
    // Read, not write, and none of a superuser's powers.
    expectForbidden(await gw.http.patch(`/api/envs/${granted.id}`).set(token).send({ description: 'x' }));
    expectForbidden(await gw.http.get('/api/api-keys').set(token));
    expectForbidden(await gw.http.get('/api/users/export-all').set(token));
    // The key shows when it was last used.
    const keys = await gw.http.get('/api/api-keys').set(root.auth);
    expect(keys.body.find((k: { id: string }) => k.id === made.id).last_used_at).toEqual(expect.any(String));
  });

  it('grants environment-admin rights with admin: true', async () => {
    const made = (await createKey({ name: 'admin', env_ids: [granted.id, other.id], admin: true })).body;
    expect(made.admin).toBe(true);
    const token = bearer((await exchange(made.key)).body.access_token);
    const patched = await gw.http.patch(`/api/envs/${other.id}`).set(token).send({ description: 'by key' });
    expect(patched.status).toBe(200);
    expect(patched.body.description).toBe('by key');
  });

  it('refuses a wrong key with LOGIN_BAD_CREDENTIALS and a malformed one with 422', async () => {
    const res = await exchange(`psk_${randomUUID().replace(/-/g, '')}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
    expectLocs(await exchange('not-a-key'), [['body', 'api_key']]);
    expectLocs(await gw.http.post('/api/auth/api-key/token').send({}), [['body', 'api_key']]);
  });

  it('revoking stops the exchanged tokens at once and refuses further exchanges', async () => {
    const made = (await createKey({ name: 'short-lived', env_ids: [granted.id] })).body;
    const token = bearer((await exchange(made.key)).body.access_token);
    expect((await gw.http.get(`/api/envs/${granted.id}`).set(token)).status).toBe(200);
    const del = await gw.http.delete(`/api/api-keys/${made.id}`).set(root.auth);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expectUnauthorized(await gw.http.get(`/api/envs/${granted.id}`).set(token));
    expectUnauthorized(await gw.http.get('/api/users/me').set(token));
    const again = await exchange(made.key);
    expect(again.status).toBe(400);
    expect(again.body).toEqual({ detail: 'LOGIN_BAD_CREDENTIALS' });
    const list = await gw.http.get('/api/api-keys').set(root.auth);
    expect(list.body.find((k: { id: string }) => k.id === made.id).revoked).toBe(true);
    const missing = await gw.http.delete(`/api/api-keys/${randomUUID()}`).set(root.auth);
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: expect.any(String) });
    expectLocs(await gw.http.delete('/api/api-keys/nope').set(root.auth), [['path', 'id']]);
  });
});

describe.each(databaseKinds())('organisation API keys (CLOUD) on %s', (kind) => {
  let gw: TestGateway;
  let root: TestUser;
  let env: { id: string };
  beforeAll(async () => {
    gw = await startTestGateway(kind, { SLUICE_DEPLOYMENT_MODE: 'CLOUD' });
    root = await gw.superuser();
    env = (await gw.http.post('/api/envs/').set(root.auth).send({ name: 'cloud-env' })).body;
  });
  afterAll(() => gw.close());

  const selfHostedOnly = (res: Response) => {
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ detail: expect.stringMatching(SELF_HOSTED_ONLY) });
  };

  it('answers the exchange with 400 SELF_HOSTED only, whatever the body', async () => {
    selfHostedOnly(
      await gw.http
        .post('/api/auth/api-key/token')
        .send({ api_key: `psk_${randomUUID().replace(/-/g, '')}` }),
    );
    selfHostedOnly(await gw.http.post('/api/auth/api-key/token').send({}));
    selfHostedOnly(await gw.http.post('/api/auth/api-key/token').send({ api_key: 42, extra: true }));
    selfHostedOnly(await gw.http.post('/api/auth/api-key/token'));
  });

  it('refuses to create, list or revoke keys with the same 400', async () => {
    selfHostedOnly(
      await gw.http
        .post('/api/api-keys')
        .set(root.auth)
        .send({ name: 'k', env_ids: [env.id] }),
    );
    expect(await gw.ctx.db.selectFrom('api_keys').selectAll().execute()).toEqual([]);
    selfHostedOnly(await gw.http.get('/api/api-keys').set(root.auth));
    selfHostedOnly(await gw.http.delete(`/api/api-keys/${randomUUID()}`).set(root.auth));
    // Permissions still come first for other callers.
    const alice = await gw.user();
    expectForbidden(
      await gw.http
        .post('/api/api-keys')
        .set(alice.auth)
        .send({ name: 'k', env_ids: [env.id] }),
    );
  });
});
