import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Express } from 'express';
import { DOCUMENTATION_PATHS } from '../src/app.js';
import { startTestGateway, type TestGateway } from './harness.js';

// The API as a whole: the OpenAPI document covers every route, error bodies
// keep the spec's shapes, and nothing internal leaks. PGlite suffices here:
// none of this depends on the database server.

interface Layer {
  route?: { path: string; methods: Record<string, boolean> };
  name: string;
  handle: { stack?: Layer[] };
  matchers?: unknown;
}

/** Walks Express 5's router stacks to list every registered method + path under /api. */
function registeredRoutes(app: Express): string[] {
  const out: string[] = [];
  const walk = (stack: Layer[], prefix: string) => {
    for (const layer of stack) {
      if (layer.route) {
        for (const m of Object.keys(layer.route.methods)) out.push(`${m} ${prefix}${layer.route.path}`);
      } else if (layer.name === 'router' && layer.handle.stack) {
        walk(layer.handle.stack, '/api');
      }
    }
  };
  walk((app as unknown as { router: { stack: Layer[] } }).router.stack, '');
  return out;
}

describe('the API surface', () => {
  let gw: TestGateway;
  let token: { Authorization: string };
  beforeAll(async () => {
    gw = await startTestGateway('pglite');
    token = (await gw.user()).auth;
  });
  afterAll(() => gw.close());

  it('describes every registered route in the OpenAPI document', () => {
    const paths = gw.openapi.paths as Record<string, Record<string, unknown>>;
    const documented = new Set(
      Object.entries(paths).flatMap(([p, ops]) =>
        Object.keys(ops).map((m) => `${m} /api${p.replace(/\{([A-Za-z_]+)\}/g, ':$1')}`),
      ),
    );
    const undocumented = registeredRoutes(gw.app).filter(
      (r) => !documented.has(r) && !DOCUMENTATION_PATHS.some((d) => r.endsWith(` /api${d}`)),
    );
    expect(undocumented).toEqual([]);
    expect(documented.size).toBeGreaterThan(40);
  });

  it('serves an OpenAPI 3.1 document whose references all resolve', async () => {
    const res = await gw.http.get('/api/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const schemas = res.body.components.schemas as Record<string, unknown>;
    const refs = JSON.stringify(res.body).match(/#\/components\/schemas\/[A-Za-z_]+/g) ?? [];
    const missing = [...new Set(refs)].filter((r) => !(r.split('/').pop()! in schemas));
    expect(missing).toEqual([]);
    expect(res.body.paths['/envs/'].post.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'Idempotency-Key', in: 'header' })]),
    );
    expect(res.body.paths['/auth/jwt/login'].post.requestBody.content).toHaveProperty(
      'application/x-www-form-urlencoded',
    );
  });

  it('serves a readable docs page with its assets', async () => {
    const page = await gw.http.get('/api/docs');
    expect(page.status).toBe(200);
    expect(page.text).toContain('swagger-ui-bundle.js');
    const asset = await gw.http.get('/api/docs/assets/swagger-ui-bundle.js');
    expect(asset.status).toBe(200);
    expect(asset.text.length).toBeGreaterThan(10000);
  });

  it('answers every authenticated route with 401 when no token is sent', async () => {
    const failures: string[] = [];
    for (const r of gw.routes.filter((x) => x.auth === 'user')) {
      const path = '/api' + r.path.replace(/:[A-Za-z_]+/g, crypto.randomUUID());
      const res = await gw.http[r.method](path).send({});
      if (res.status !== 401 || res.body.detail !== 'Unauthorized')
        failures.push(`${r.method} ${r.path}: ${res.status}`);
    }
    expect(failures).toEqual([]);
  });

  it('refuses garbage and tampered bearer tokens with 401', async () => {
    expect((await gw.http.get('/api/users/me').set('Authorization', 'Bearer nope')).status).toBe(401);
    const [h, p] = token.Authorization.slice(7).split('.');
    const forged = `${h}.${p}.${'A'.repeat(43)}`;
    const res = await gw.http.get('/api/users/me').set('Authorization', `Bearer ${forged}`);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
  });

  it('answers unknown paths with 404 {detail: "Not Found"}', async () => {
    for (const path of ['/api/nothing-here', '/nothing', '/api/users/me/nothing']) {
      const res = await gw.http.get(path).set(token);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: 'Not Found' });
    }
  });

  it('answers malformed JSON with a 422 in the validation shape, without internals', async () => {
    const res = await gw.http
      .post('/api/envs/')
      .set(token)
      .set('Content-Type', 'application/json')
      .send('{"name": ');
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      detail: [{ loc: ['body'], msg: 'The body is not valid JSON', type: 'json_invalid' }],
    });
  });

  it('reports every validation problem at once with loc, msg and type', async () => {
    const res = await gw.http
      .post('/api/envs/')
      .set(token)
      .send({ name: '', use_retention: 'yes', extra: 1 });
    expect(res.status).toBe(422);
    const locs = res.body.detail.map((d: { loc: unknown[] }) => d.loc);
    expect(locs).toEqual(
      expect.arrayContaining([
        ['body', 'name'],
        ['body', 'use_retention'],
        ['body', 'extra'],
      ]),
    );
    for (const d of res.body.detail) {
      expect(Object.keys(d).sort()).toEqual(['loc', 'msg', 'type']);
      expect(typeof d.msg).toBe('string');
    }
    expect(res.body.detail.find((d: { loc: string[] }) => d.loc[1] === 'extra').type).toBe('extra_forbidden');
  });

  it('rejects bodies over the size limit with 413', async () => {
    const res = await gw.http
      .post('/api/envs/')
      .set(token)
      .send({ name: 'x', description: 'y'.repeat(2 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(res.body).toEqual({ detail: 'Request body too large' });
  });

  it('sets security headers and a request id', async () => {
    const res = await gw.http.get('/api/healthchecks').set('X-Request-Id', 'trace-123');
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBeDefined();
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.headers['x-request-id']).toBe('trace-123');
  });

  it('hides internal failures behind a bare 500', async () => {
    const gw2 = await startTestGateway('pglite');
    const u = await gw2.user();
    await gw2.ctx.db.destroy();
    const res = await gw2.http.get('/api/envs/').set(u.auth);
    expect(res.status).toBe(500);
    expect(res.body).toEqual({ detail: 'Internal Server Error' });
    await gw2.close().catch(() => undefined);
  });
});

describe('CORS', () => {
  it('answers preflights only for configured origins', async () => {
    const gw = await startTestGateway('pglite', { SLUICE_CORS_ORIGINS: 'https://ui.example.com' });
    try {
      const ok = await gw.http
        .options('/api/envs/')
        .set('Origin', 'https://ui.example.com')
        .set('Access-Control-Request-Method', 'POST');
      expect(ok.headers['access-control-allow-origin']).toBe('https://ui.example.com');
      const other = await gw.http
        .options('/api/envs/')
        .set('Origin', 'https://evil.example.com')
        .set('Access-Control-Request-Method', 'POST');
      expect(other.headers['access-control-allow-origin']).toBeUndefined();
    } finally {
      await gw.close();
    }
  });
});
