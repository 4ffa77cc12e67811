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
 * answers it), not a 404. Mounted before the routes: a path has the methods
 * of the most specific routes that match it, those with the fewest
 * parameters (`/teams/filter-one` those of that fixed route, not also those
 * of `/teams/:id`, whose UUID it could never be; `/teams/:id/members/bulk`
 * not those of `/teams/:id/members/:user_id`). A path no route has falls
 * through to the 404.
 */
export function methodNotAllowed(routes: { method: string; path: string }[]): RequestHandler {
  const byPath = new Map<string, { re: RegExp; params: number; methods: Set<string> }>();
  for (const r of routes) {
    const entry = byPath.get(r.path) ?? {
      re: matcher(r.path),
      params: r.path.split('/').filter((seg) => seg.startsWith(':')).length,
      methods: new Set<string>(),
    };
    entry.methods.add(r.method.toUpperCase());
    if (r.method === 'get') entry.methods.add('HEAD');
    byPath.set(r.path, entry);
  }
  const entries = [...byPath.values()];
  return (req, _res, next) => {
    const matching = entries.filter((e) => e.re.test(req.path));
    const fewest = Math.min(...matching.map((e) => e.params));
    const allowed = new Set(matching.filter((e) => e.params === fewest).flatMap((e) => [...e.methods]));
    if (allowed.size === 0 || allowed.has(req.method)) return next();
    next(new HttpError(405, 'Method Not Allowed', { Allow: [...allowed].sort().join(', ') }));
  };
}
