import { createSecretKey, randomUUID, type KeyObject } from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { TokenKind } from './principal.js';

export const JWT_ISSUER = 'sluice';
export const JWT_AUDIENCE = 'sluice:api';
export const JWT_ALGORITHM = 'HS256';

export interface TokenClaims {
  sub: string;
  jti: string;
  iat: number;
  exp: number;
  kind: TokenKind;
}

/**
 * Issues and verifies the service's bearer tokens (HS256). The secret is a
 * prepared KeyObject: with a string, jsonwebtoken first tries to parse it as a
 * public key on every verify, ~50x slower (architecture brief, measured).
 */
export class TokenService {
  readonly key: KeyObject;

  constructor(
    secret: string,
    readonly defaultLifetimeS: number,
  ) {
    this.key = createSecretKey(Buffer.from(secret, 'utf8'));
  }

  issue(userId: string, kind: TokenKind, lifetimeS = this.defaultLifetimeS, jti: string = randomUUID()) {
    // `iat` keeps milliseconds (a NumericDate may be fractional, RFC 7519 §2), so a
    // password reset also ends the sessions opened earlier within the same second.
    const nowMs = Date.now();
    const iat = nowMs / 1000;
    const exp = Math.floor(nowMs / 1000) + lifetimeS;
    const token = jwt.sign({ sub: userId, jti, iat, exp, kind }, this.key, {
      algorithm: JWT_ALGORITHM,
      issuer: JWT_ISSUER,
      audience: JWT_AUDIENCE,
    });
    return { token, jti, exp, expiresIn: lifetimeS };
  }

  /** Throws on anything but a well-formed, unexpired HS256 token of ours. */
  verify(token: string): TokenClaims {
    const claims = jwt.verify(token, this.key, {
      algorithms: [JWT_ALGORITHM],
      issuer: JWT_ISSUER,
      audience: JWT_AUDIENCE,
    }) as Partial<TokenClaims>;
    if (typeof claims.sub !== 'string' || typeof claims.jti !== 'string' || typeof claims.exp !== 'number') {
      throw new Error('Token lacks required claims');
    }
    return claims as TokenClaims;
  }
}

/** Options for passport-jwt, the same pins as TokenService.verify. */
export const jwtVerifyOptions = {
  algorithms: [JWT_ALGORITHM] as jwt.Algorithm[],
  issuer: JWT_ISSUER,
  audience: JWT_AUDIENCE,
};
