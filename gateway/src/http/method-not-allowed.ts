import type { RequestHandler } from 'express';
import { HttpError } from './errors.js';

/** The route table as a tree of path segments: fixed segments by name, and one `:param` child. */
interface Node {
  fixed: Map<string, Node>;
  param?: Node;
  /** The methods of the routes whose path ends here (HEAD with GET). */
  methods?: Set<string>;
}

const node = (): Node => ({ fixed: new Map() });

/** A path's segments; one trailing slash is no segment (Express routes are not strict: `/envs/` is `/envs`). */
const segmentsOf = (path: string): string[] => (path.endsWith('/') ? path.slice(0, -1) : path).split('/');

/**
 * The methods of the most specific routes that match `segments` from
 * `from`: those with the fewest parameters. Undefined: no route matches.
 */
function lookup(
  at: Node,
  segments: string[],
  from: number,
  params: number,
): { params: number; methods: Set<string> } | undefined {
  if (from === segments.length) return at.methods && { params, methods: at.methods };
  const seg = segments[from]!;
  const byName = at.fixed.get(seg);
  const fixed = byName && lookup(byName, segments, from + 1, params);
  const param = seg !== '' && at.param ? lookup(at.param, segments, from + 1, params + 1) : undefined;
  if (!fixed || !param) return fixed ?? param;
  if (fixed.params !== param.params) return fixed.params < param.params ? fixed : param;
  return { params: fixed.params, methods: new Set([...fixed.methods, ...param.methods]) };
}

/**
 * RFC 9110 15.5.6, as FastAPI answers: a method the path does not have is a
 * 405 with `Allow` naming the methods it has (HEAD with GET, as Express
 * answers it), not a 404. Mounted before the routes: a path has the methods
 * of the most specific routes that match it, those with the fewest
 * parameters (`/teams/filter-one` those of that fixed route, not also those
 * of `/teams/:id`, whose UUID it could never be; `/teams/:id/members/bulk`
 * not those of `/teams/:id/members/:user_id`). A path no route has falls
 * through to the 404. The table is a tree built once: a request walks its
 * own segments, whatever the number of routes.
 */
export function methodNotAllowed(routes: { method: string; path: string }[]): RequestHandler {
  const root = node();
  for (const r of routes) {
    let at = root;
    for (const seg of r.path.replace(/\/+$/, '').split('/')) {
      if (seg.startsWith(':')) at = at.param ??= node();
      else at = at.fixed.get(seg) ?? (at.fixed.set(seg, node()).get(seg) as Node);
    }
    at.methods ??= new Set();
    at.methods.add(r.method.toUpperCase());
    if (r.method === 'get') at.methods.add('HEAD');
  }
  return (req, _res, next) => {
    const allowed = lookup(root, segmentsOf(req.path), 0, 0)?.methods;
    if (!allowed || allowed.has(req.method)) return next();
    next(new HttpError(405, 'Method Not Allowed', { Allow: [...allowed].sort().join(', ') }));
  };
}
