import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';

describe.each(databaseKinds())('health, probes and deployment info on %s', (kind) => {
  let gw: TestGateway;
  beforeAll(async () => {
    gw = await startTestGateway(kind);
  });
  afterAll(() => gw.close());

  it('answers the probes without a token', async () => {
    for (const path of ['/api/healthchecks', '/api/livez', '/api/readyz', '/api/healthchecks/db']) {
      const res = await gw.http.get(path);
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('ok');
    }
    expect((await gw.http.get('/api/healthchecks/db')).body.database).toBe(kind);
  });

  it('reports the cluster adapter in use and that it is reachable', async () => {
    const res = await gw.http.get('/api/healthchecks/k8s');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', adapter: 'embedded', reachable: true });
  });

  it('echoes request headers for debugging but never credentials', async () => {
    const u = await gw.user();
    const res = await gw.http
      .get('/api/healthchecks/debug')
      .set(u.auth)
      .set('Cookie', 'session=1')
      .set('X-Trace', 'abc');
    expect(res.status).toBe(200);
    expect(res.body.header['x-trace']).toBe('abc');
    expect(res.body.header.authorization).toBeUndefined();
    expect(res.body.header.cookie).toBeUndefined();
    expect(JSON.stringify(res.body)).not.toContain(u.token);
  });

  it('describes the deployment to authenticated callers', async () => {
    expect((await gw.http.get('/api/config/deployment')).status).toBe(401);
    const u = await gw.user();
    const res = await gw.http.get('/api/config/deployment').set(u.auth);
    expect(res.body).toEqual({
      mode: 'SELF_HOSTED',
      version: '0.1.0',
      registration_allowed: true,
      verification_required: false,
      api_key_login: true,
      cluster_adapter: 'embedded',
      database: kind,
    });
  });
});

describe('readiness when the database is gone', () => {
  it('fails /readyz and /healthchecks/db with 503 while /livez stays up', async () => {
    const gw = await startTestGateway('pglite');
    await gw.ctx.db.destroy();
    expect((await gw.http.get('/api/readyz')).status).toBe(503);
    expect((await gw.http.get('/api/healthchecks/db')).body).toEqual({
      status: 'unavailable',
      database: 'pglite',
    });
    expect((await gw.http.get('/api/healthchecks/k8s')).status).toBe(503);
    expect((await gw.http.get('/api/livez')).status).toBe(200);
    await gw.close().catch(() => undefined);
  });
});
