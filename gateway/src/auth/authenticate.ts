import type { RequestHandler } from 'express';
import passport from 'passport';
import { ExtractJwt, Strategy as JwtStrategy } from 'passport-jwt';
import type { Db } from '../db/database.js';
import { unauthorized } from '../http/errors.js';
import { findPrincipalUser } from './auth.repository.js';
import type { PrincipalCache } from './principal-cache.js';
import type { Principal } from './principal.js';
import { jwtVerifyOptions, type TokenClaims, type TokenService } from './tokens.js';

/**
 * Resolves a verified token to a principal: the user must exist and be
 * active, the token must not be revoked (logout) and must be newer than the
 * user's last password reset. One query per request.
 */
export async function principalFromClaims(db: Db, claims: TokenClaims): Promise<Principal | undefined> {
  const row = await findPrincipalUser(db, claims.sub, claims.jti);
  if (!row || row.revoked || !row.is_active) return undefined;
  if (row.tokens_valid_after && claims.iat * 1000 < new Date(row.tokens_valid_after).getTime()) {
    return undefined;
  }
  const { revoked: _revoked, ...user } = row;
  return { user, tokenId: claims.jti, tokenExp: claims.exp, tokenKind: claims.kind ?? 'access' };
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
      const cached = cache?.get(claims.jti);
      if (cached) return done(null, cached);
      principalFromClaims(db, claims).then(
        (p) => {
          if (p) cache?.set(claims.jti, p);
          done(null, p ?? false);
        },
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
