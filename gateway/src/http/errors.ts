import type { ErrorRequestHandler } from 'express';
import type { Logger } from 'pino';
import { ConflictError } from '@sluice/shared/ports';

export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** A failure with a status and a body the client may see (spec section 7). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
    readonly headers: Record<string, string> = {},
  ) {
    super(typeof detail === 'string' ? detail : `HTTP ${status}`);
    this.name = 'HttpError';
  }
}

export const badRequest = (code: string, reason?: string) =>
  new HttpError(400, reason === undefined ? code : { code, reason });
export const unauthorized = () => new HttpError(401, 'Unauthorized', { 'WWW-Authenticate': 'Bearer' });
export const forbidden = (detail = 'You do not have permission to do this') => new HttpError(403, detail);
export const notFound = (what = 'Not Found') => new HttpError(404, what);
export const conflict = (detail: string) => new HttpError(409, detail);
export const unprocessable = (issues: ValidationIssue[]) => new HttpError(422, issues);
export const invalid = (loc: (string | number)[], msg: string, type = 'value_error') =>
  unprocessable([{ loc, msg, type }]);

/**
 * The one place that turns errors into HTTP bodies. Anything that is not an
 * HttpError is a bug or an outage: it is logged with its stack on the server,
 * and the client gets a bare 500 — never a stack trace, SQL text or a secret.
 */
export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    if (res.headersSent) return;
    if (err instanceof HttpError) {
      res.set(err.headers).status(err.status).json({ detail: err.detail });
      return;
    }
    // Optimistic concurrency of the cluster API: another write came first.
    if (err instanceof ConflictError) {
      res
        .status(409)
        .json({ detail: 'The resource was changed by another request: read it again and retry' });
      return;
    }
    const e = err as { type?: string; status?: number; expose?: boolean };
    // body-parser errors: malformed JSON and oversized bodies are the client's.
    if (e?.type === 'entity.parse.failed') {
      res
        .status(422)
        .json({ detail: [{ loc: ['body'], msg: 'The body is not valid JSON', type: 'json_invalid' }] });
      return;
    }
    if (e?.type === 'entity.too.large') {
      res.status(413).json({ detail: 'Request body too large' });
      return;
    }
    if (e?.expose && typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
      res.status(e.status).json({ detail: 'Bad request' });
      return;
    }
    ((req as { log?: Logger }).log ?? log).error({ err }, 'Unhandled error');
    res.status(500).json({ detail: 'Internal Server Error' });
  };
}
