import type { Request, RequestHandler } from 'express';
import { ipKeyGenerator, rateLimit } from 'express-rate-limit';

/**
 * The throttles of the public auth routes (docs/security.md, "Rate limits").
 * In memory, per gateway replica.
 */

/** The client address as the limits count it (an IPv6 client by its /56). */
const addressOf = (req: Request) => ipKeyGenerator(req.ip ?? '');

/** The account a login names: the e-mail, or an API key's public prefix. */
function accountOf(req: Request): string {
  const b = (req.body ?? {}) as { username?: unknown; api_key?: unknown };
  const id =
    typeof b.username === 'string' ? b.username : typeof b.api_key === 'string' ? b.api_key.slice(0, 12) : '';
  return id.toLowerCase();
}

function tooMany(detail: string, windowS: number): RequestHandler {
  return (req, res) => {
    const reset = (req as { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
    const retry = reset ? Math.max(1, Math.ceil((reset.getTime() - Date.now()) / 1000)) : windowS;
    res.set('Retry-After', String(retry)).status(429).json({ detail });
  };
}

/**
 * Login throttles: every attempt counts against the client's address
 * (`perAddress`); failed attempts count against the pair of address and
 * account (`perAccount`). Over either: 429 with Retry-After, before any
 * password is checked. The account's own limit is per address on purpose:
 * a stranger who fails ten times on someone else's account blocks only
 * their own address, and the owner still logs in from theirs.
 */
export function loginLimiters(opts: {
  perAccount: number;
  perAddress: number;
  windowS: number;
}): RequestHandler[] {
  const handler = tooMany('LOGIN_TOO_MANY_ATTEMPTS', opts.windowS);
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
      keyGenerator: (req) => `pair:${addressOf(req)}:${accountOf(req)}`,
      validate: false,
    }),
  ];
}

/** Set on a request whose mail is over its account's limit: answered as usual, not sent. */
export function mailSuppressed(req: Request): boolean {
  return (req as { mailSuppressed?: boolean }).mailSuppressed === true;
}

/**
 * Throttles of the routes that send mail to an address given in the body
 * (`forgot-password`, `request-verify-token`; one pair per route):
 * - per client address (`perAddress`, every request): 429 with Retry-After,
 *   which says nothing about any account;
 * - per e-mail address (`perAccount`, every request, known address or not):
 *   the answer stays 202, so it does not reveal whether the account exists,
 *   and the mail is not sent (`mailSuppressed`).
 */
export function mailLimiters(opts: {
  perAccount: number;
  perAddress: number;
  windowS: number;
}): RequestHandler[] {
  const windowMs = opts.windowS * 1000;
  return [
    rateLimit({
      windowMs,
      limit: opts.perAddress,
      handler: tooMany('TOO_MANY_REQUESTS', opts.windowS),
      standardHeaders: false,
      legacyHeaders: false,
    }),
    rateLimit({
      windowMs,
      limit: opts.perAccount,
      standardHeaders: false,
      legacyHeaders: false,
      keyGenerator: (req) => {
        const email = (req.body as { email?: unknown } | undefined)?.email;
        return `mail:${typeof email === 'string' ? email.toLowerCase() : ''}`;
      },
      handler: (req, _res, next) => {
        (req as { mailSuppressed?: boolean }).mailSuppressed = true;
        next();
      },
      validate: false,
    }),
  ];
}
