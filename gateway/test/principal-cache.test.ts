import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { updateUser } from '../src/features/users/users.repository.js';
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
