import type { RequestHandler } from 'express';
import { rateLimit } from 'express-rate-limit';

/**
 * Login throttles (in memory, per gateway replica): every attempt counts
 * against the caller's address; failed attempts count against the account.
 * Over either limit: 429 with Retry-After, before any password is checked.
 */
export function loginLimiters(opts: {
  perAccount: number;
  perAddress: number;
  windowS: number;
}): RequestHandler[] {
  const handler: RequestHandler = (req, res) => {
    const reset = (req as { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
    const retry = reset ? Math.max(1, Math.ceil((reset.getTime() - Date.now()) / 1000)) : opts.windowS;
    res.set('Retry-After', String(retry)).status(429).json({ detail: 'LOGIN_TOO_MANY_ATTEMPTS' });
  };
  const windowMs = opts.windowS * 1000;
  return [
    rateLimit({ windowMs, limit: opts.perAddress, handler, standardHeaders: false, legacyHeaders: false }),
    rateLimit({
      windowMs,
      limit: opts.perAccount,
      handler,
      standardHeaders: false,
      legacyHeaders: false,
      skipSuccessfulRequests: true,
      keyGenerator: (req) => {
        const b = (req.body ?? {}) as { username?: unknown; api_key?: unknown };
        const id =
          typeof b.username === 'string'
            ? b.username
            : typeof b.api_key === 'string'
              ? b.api_key.slice(0, 12)
              : '';
        return `account:${id.toLowerCase()}`;
      },
      validate: false,
    }),
  ];
}
