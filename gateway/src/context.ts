import type { SecretBox, SecretStorePort } from '@sluice/shared';
import type { Logger } from 'pino';
import type { Passwords } from './auth/passwords.js';
import type { PrincipalCache } from './auth/principal-cache.js';
import type { TokenService } from './auth/tokens.js';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import type { Mailer } from './mail/mailer.js';

/** What every feature may use; built once at start (main.ts) or per test. */
export interface GatewayContext {
  config: Config;
  db: Db;
  dbKind: 'postgres' | 'pglite';
  log: Logger;
  tokens: TokenService;
  /** Cleared by every database write of this process (auth/principal-cache.ts). */
  principals: PrincipalCache;
  passwords: Passwords;
  mailer: Mailer;
  secrets: SecretBox;
  /** The Secrets of the worker namespace (`config.namespace`) that secret fields reference (spec 2.14). */
  secretStore: SecretStorePort;
}
