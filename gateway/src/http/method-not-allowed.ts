import type { RequestHandler } from 'express';
import { HttpError } from './errors.js';

/** A path of the route table (Express syntax, `:name` segments) as a matcher of request paths. */
function matcher(path: string): RegExp {
  const body = path
    .replace(/\/+$/, '')
    .split('/')
    .map((seg) => (seg.startsWith(':') ? '[^/]+' : seg.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
    .join('/');
  // Express routes are not strict: `/envs/` and `/envs` are the same route.
  return new RegExp(`^${body}/?$`);
}

/**
 * RFC 9110 15.5.6, as FastAPI answers: a method the path does not have is a
 * 405 with `Allow` naming the methods it has (HEAD with GET, as Express
 * answers it), not a 404. Mounted before the routes: a path that is a fixed
 * route (`/teams/filter-one`) has that route's methods only, even where a
 * route with a parameter would also match it (`/teams/:id`, whose UUID it
 * could never be); other paths have the methods of every route that matches
 * them. A path no route has falls through to the 404.
 */
export function methodNotAllowed(routes: { method: string; path: string }[]): RequestHandler {
  const byPath = new Map<string, { re: RegExp; fixed: boolean; methods: Set<string> }>();
  for (const r of routes) {
    const entry = byPath.get(r.path) ?? {
      re: matcher(r.path),
      fixed: !r.path.includes(':'),
      methods: new Set<string>(),
    };
    entry.methods.add(r.method.toUpperCase());
    if (r.method === 'get') entry.methods.add('HEAD');
    byPath.set(r.path, entry);
  }
  const entries = [...byPath.values()];
  return (req, _res, next) => {
    const matching = entries.filter((e) => e.re.test(req.path));
    const fixed = matching.filter((e) => e.fixed);
    const allowed = new Set((fixed.length ? fixed : matching).flatMap((e) => [...e.methods]));
    if (allowed.size === 0 || allowed.has(req.method)) return next();
    next(new HttpError(405, 'Method Not Allowed', { Allow: [...allowed].sort().join(', ') }));
  };
}
