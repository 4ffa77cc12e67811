import type { UserRow } from '../db/schema.js';

export type TokenKind = 'access' | 'service' | 'api-key';

/** Who is calling, established once per request by the bearer token. */
export interface Principal {
  user: UserRow;
  tokenId: string;
  /** Seconds since the epoch. */
  tokenExp: number;
  tokenKind: TokenKind;
}
