import type { RequestHandler } from 'express';
import { isUuid } from '@sluice/shared/schemas';
import passport from 'passport';
import { ExtractJwt, Strategy as JwtStrategy } from 'passport-jwt';
import type { Db } from '../db/database.js';
import { unauthorized } from '../http/errors.js';
import { findPrincipalUser } from './auth.repository.js';
import type { PrincipalCache } from './principal-cache.js';
import type { Principal } from './principal.js';
import { jwtVerifyOptions, type TokenClaims, type TokenService } from './tokens.js';

const KINDS = new Set<unknown>(['access', 'service', 'api-key']);

/**
 * Resolves a verified token to a principal: the user must exist and be
 * active, the token must not be revoked (logout) and must be newer than the
 * user's last password change, unless it is the token that change was made
 * with (`tokens_kept_jti`). One query per request. Claims of the wrong shape
 * (a `sub` that is not a user id, a missing `iat`) are refused like a bad
 * signature, before any query.
 */
export async function principalFromClaims(db: Db, claims: TokenClaims): Promise<Principal | undefined> {
  if (!isUuid(claims.sub) || typeof claims.iat !== 'number' || !Number.isFinite(claims.iat)) {
    return undefined;
  }
  if (claims.kind !== undefined && !KINDS.has(claims.kind)) return undefined;
  const row = await findPrincipalUser(db, claims.sub, claims.jti);
  if (!row || row.revoked || !row.is_active) return undefined;
  if (
    row.tokens_valid_after &&
    claims.iat * 1000 < new Date(row.tokens_valid_after).getTime() &&
    claims.jti !== row.tokens_kept_jti
  ) {
    return undefined;
  }
  const { revoked: _revoked, ...user } = row;
  return { user, tokenId: claims.jti, tokenExp: claims.exp, tokenKind: claims.kind ?? 'access' };
}

/**
 * The principal of verified claims, from the cache or the database. A
 * lookup that raced a write is not cached (`PrincipalCache.generation`).
 */
export async function resolvePrincipal(
  db: Db,
  claims: TokenClaims,
  cache?: PrincipalCache,
): Promise<Principal | undefined> {
  const cached = cache?.get(claims.jti);
  if (cached) return cached;
  const generation = cache?.generation ?? 0;
  const p = await principalFromClaims(db, claims);
  if (p) cache?.set(claims.jti, p, generation);
  return p;
}

/** The passport-jwt strategy; `authenticate` wraps it to answer 401 in the spec's shape. */
export function createAuthenticator(db: Db, tokens: TokenService, cache?: PrincipalCache): RequestHandler {
  const strategy = new JwtStrategy(
    {
      jwtFromRequest: ExtractJwt.fromAuthHeaderAsBearerToken(),
      secretOrKey: tokens.key as unknown as string,
      ...jwtVerifyOptions,
    },
    (claims: TokenClaims, done: (err: unknown, user?: Principal | false) => void) => {
      resolvePrincipal(db, claims, cache).then(
        (p) => done(null, p ?? false),
        (err: unknown) => done(err),
      );
    },
  );
  const name = `jwt-${Math.random().toString(36).slice(2)}`;
  passport.use(name, strategy);
  return (req, res, next) => {
    passport.authenticate(name, { session: false }, (err: unknown, principal: Principal | false) => {
      if (err) return next(err);
      if (!principal) return next(unauthorized());
      (req as { principal?: Principal }).principal = principal;
      next();
    })(req, res, next);
  };
}
