import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type { Logger } from 'pino';
import type { Principal } from '../auth/principal.js';
import type { Db } from '../db/database.js';
import { unprocessable } from './errors.js';
import { withIdempotency } from './idempotency.js';
import { inputIssues } from './input-limits.js';
import type { AnyRoute, Reply } from './route.js';
import { check } from './validation.js';

export interface MountOptions {
  db: Db;
  authenticate: RequestHandler;
  validateResponses: boolean;
  log: Logger;
}

const formParser = express.urlencoded({ extended: false, limit: '64kb' });
/** A form route reads only a form: a body in another encoding (JSON) counts as absent, so it is a 422. */
const formOnly: RequestHandler = (req, _res, next) => {
  if (!req.is('application/x-www-form-urlencoded')) req.body = undefined;
  next();
};

function send(res: Response, reply: Reply): void {
  if (reply.headers) res.set(reply.headers);
  res.status(reply.status);
  if (reply.body === undefined) res.end();
  else res.json(reply.body);
}

/** Registers every route: auth, validation of path/query/body, idempotency, handler, reply. */
export function mountRoutes(router: Router, routes: AnyRoute[], opts: MountOptions): void {
  for (const r of routes) {
    const chain: RequestHandler[] = [];
    if (r.bodyEncoding === 'form') chain.push(formParser, formOnly);
    if (r.auth === 'user') chain.push(opts.authenticate);
    if (r.before) chain.push(...r.before);
    chain.push(async (req: Request, res: Response, next) => {
      try {
        // Express 5 exposes req.query as a getter: validate a copy we own.
        const params = { ...req.params };
        const query = { ...(req.query as Record<string, unknown>) };
        const body: unknown = r.body ? (req.body ?? {}) : undefined;
        // The input limits first: a body too deep for them is not walked again by ajv.
        const limits = [
          ...inputIssues(params, 'path'),
          ...inputIssues(query, 'query'),
          ...(r.body ? inputIssues(body, 'body') : []),
        ];
        if (limits.length) throw unprocessable(limits);
        const issues = [
          ...(r.params ? check(r.params, params, 'path') : []),
          ...(r.query ? check(r.query, query, 'query') : []),
          ...(r.body ? check(r.body, body, 'body') : []),
        ];
        if (issues.length) throw unprocessable(issues);
        for (const f of r.ignoredBodyFields ?? []) delete (body as Record<string, unknown>)[f];
        const principal = (req as { principal?: Principal }).principal as Principal;
        const log = (req as { log?: Logger }).log ?? opts.log;
        const run = () => r.handler({ params, query, body, principal, req, res, log } as never);
        const key = req.get('Idempotency-Key');
        const reply =
          r.idempotent && key !== undefined && principal
            ? await withIdempotency(
                opts.db,
                principal.user.id,
                key,
                r.method,
                req.baseUrl + r.path,
                body,
                run,
              )
            : await run();
        if (opts.validateResponses) {
          const spec = r.responses[reply.status];
          if (!spec)
            throw new Error(`${r.method.toUpperCase()} ${r.path} answered undeclared status ${reply.status}`);
          if (spec.schema) {
            const bad = check(spec.schema, structuredClone(reply.body), 'body');
            if (bad.length) {
              throw new Error(
                `${r.method.toUpperCase()} ${r.path} response breaks its schema: ${JSON.stringify(bad)}`,
              );
            }
          }
        }
        send(res, reply);
      } catch (err) {
        next(err);
      }
    });
    router[r.method](r.path, ...chain);
  }
}
