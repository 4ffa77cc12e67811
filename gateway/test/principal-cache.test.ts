import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Principal } from '../src/auth/principal.js';
import { findUserById, updateUser } from '../src/features/users/users.repository.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';

// Resolved tokens are cached for a moment (auth/principal-cache.ts); every
// write of this process must clear them, whichever code path wrote.
describe.each(databaseKinds())('the principal cache on %s', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
  });
  afterAll(() => gw.close());

  it('serves repeated requests of one token from the cache', async () => {
    const u = await gw.user();
    await gw.http.get('/api/users/me').set(u.auth);
    const principal = gw.ctx.principals.get(
      JSON.parse(Buffer.from(u.token.split('.')[1]!, 'base64url').toString()).jti,
    );
    expect(principal?.user.id).toBe(u.id);
  });

  it('does not keep a lookup that raced a write (it may hold the row from before a logout)', async () => {
    const u = await gw.user();
    const other = await gw.login(u.email, u.password);
    const jti = JSON.parse(Buffer.from(other.split('.')[1]!, 'base64url').toString()).jti as string;
    // A lookup of `other` starts: it notes the cache's generation and reads the user...
    const generation = gw.ctx.principals.generation;
    const stale: Principal = {
      user: (await findUserById(gw.ctx.db, u.id))!,
      tokenId: jti,
      tokenExp: Math.floor(Date.now() / 1000) + 60,
      tokenKind: 'access',
    };
    // ...meanwhile another request of this gateway ends every other session...
    const changed = await gw.http
      .post('/api/users/me/change-password')
      .set(u.auth)
      .send({ old_password: u.password, new_password: 'raced-password-1' });
    expect(changed.status).toBe(200);
    // ...so what the lookup read is not cached, and the next request asks the database.
    gw.ctx.principals.set(jti, stale, generation);
    expect(gw.ctx.principals.get(jti)).toBeUndefined();
    expect((await gw.http.get('/api/users/me').set({ Authorization: `Bearer ${other}` })).status).toBe(401);
    expect((await gw.http.get('/api/users/me').set(u.auth)).status).toBe(200);
  });

  it('sees a write made outside any route at once', async () => {
    const u = await gw.user();
    expect((await gw.http.get('/api/users/me').set(u.auth)).status).toBe(200);
    await updateUser(gw.ctx.db, u.id, { is_active: false });
    expect((await gw.http.get('/api/users/me').set(u.auth)).status).toBe(401);
  });

  it('shows a new active environment on the very next request', async () => {
    const u = await gw.user();
    expect((await gw.http.get('/api/users/me').set(u.auth)).body.active_env_id).toBeNull();
    const env = (
      await gw.http
        .post('/api/envs/')
        .set(u.auth)
        .send({ name: `cache-${u.id}` })
    ).body;
    expect((await gw.http.get('/api/users/me').set(u.auth)).body.active_env_id).toBe(env.id);
    expect((await gw.http.post('/api/teams/').set(u.auth).send({ name: 'right-away' })).status).toBe(201);
  });
});

describe('the principal cache turned off', () => {
  it('resolves every request from the database', async () => {
    const gw = await startTestGateway('pglite', { SLUICE_PRINCIPAL_CACHE_MS: '0' });
    try {
      const u = await gw.user();
      await gw.http.get('/api/users/me').set(u.auth);
      const jti = JSON.parse(Buffer.from(u.token.split('.')[1]!, 'base64url').toString()).jti;
      expect(gw.ctx.principals.get(jti)).toBeUndefined();
    } finally {
      await gw.close();
    }
  });
});
