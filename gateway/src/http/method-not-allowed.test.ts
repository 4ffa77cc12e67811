import { describe, expect, it } from '@jest/globals';
import express, { type ErrorRequestHandler } from 'express';
import request from 'supertest';
import type { HttpError } from './errors.js';
import { methodNotAllowed } from './method-not-allowed.js';

const ROUTES = [
  { method: 'get', path: '/' },
  { method: 'get', path: '/envs/' },
  { method: 'post', path: '/envs/' },
  { method: 'get', path: '/teams/:id' },
  { method: 'delete', path: '/teams/:id' },
  { method: 'get', path: '/teams/filter-one' },
  { method: 'post', path: '/teams/:id/members/bulk' },
  { method: 'delete', path: '/teams/:id/members/:user_id' },
  { method: 'put', path: '/a/:x/c' },
  { method: 'patch', path: '/a/b/:y' },
];

// The handler before a catch-all that answers 404, and the errors as the gateway answers them.
const app = express();
app.use(methodNotAllowed(ROUTES));
app.use((_req, res) => void res.status(404).json({ detail: 'Not Found' }));
app.use(((err, _req, res, _next) => {
  const e = err as HttpError;
  res
    .set(e.headers ?? {})
    .status(e.status)
    .json({ detail: e.message });
}) as ErrorRequestHandler);

const allow = async (method: 'put' | 'patch' | 'post' | 'delete' | 'get', path: string) => {
  const res = await request(app)[method](path);
  return res.status === 405 ? res.headers.allow : res.status;
};

describe('405 with Allow', () => {
  it('names the methods of the path, HEAD with GET, with or without the trailing slash', async () => {
    expect(await allow('put', '/envs')).toBe('GET, HEAD, POST');
    expect(await allow('put', '/envs/')).toBe('GET, HEAD, POST');
    expect(await allow('post', '/')).toBe('GET, HEAD');
    expect(await allow('post', '/envs')).toBe(404);
  });

  it('takes the most specific routes: those with the fewest parameters', async () => {
    expect(await allow('delete', '/teams/filter-one')).toBe('GET, HEAD');
    expect(await allow('put', '/teams/0b6f1c2e-1111-4aaa-8bbb-000000000001')).toBe('DELETE, GET, HEAD');
    expect(await allow('get', '/teams/t1/members/bulk')).toBe('POST');
    expect(await allow('get', '/teams/t1/members/u1')).toBe('DELETE');
    // Two routes as specific as each other: the methods of both.
    expect(await allow('get', '/a/b/c')).toBe('PATCH, PUT');
    expect(await allow('get', '/a/z/c')).toBe('PUT');
  });

  it('lets a path no route has, an empty segment or an extra slash, through to the 404', async () => {
    for (const path of ['/nothing', '/teams', '/teams//members/bulk', '/envs//', '/teams/t1/extra/deep']) {
      expect(await allow('put', path)).toBe(404);
    }
  });
});
