import type { SecretBox } from '@sluice/shared/crypto';
import type { OutboundHttpOptions } from '@sluice/shared/net';
import type { ClusterPort, SecretStorePort, WorkerReaderPort } from '@sluice/shared/ports';
import type { Logger } from 'pino';
import type { Passwords } from './auth/passwords.js';
import type { PrincipalCache } from './auth/principal-cache.js';
import type { TokenService } from './auth/tokens.js';
import type { CatalogStore } from './catalog/store.js';
import type { Config } from './config.js';
import type { Db } from './db/database.js';
import type { Mailer } from './mail/mailer.js';
import type { MirrorSync } from './mirror/sync.js';

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
  /** The Secrets of the worker namespace (`config.workerNamespace`) that secret fields reference (spec 2.14). */
  secretStore: SecretStorePort;
  /** The custom resources (SLUICE_CLUSTER_ADAPTER): the source of truth of the catalog. */
  cluster: ClusterPort;
  /** Writes of custom resources through the cluster and on to the mirror. */
  catalog: CatalogStore;
  /** The watch-driven sync of the mirror; started with the context. */
  mirror: MirrorSync;
  /** How warehouse hosts are called: the outbound-address policy, trusted CAs, deadlines. */
  warehouseHttp: OutboundHttpOptions;
  /**
   * The workers, read only (worker logs, features/logs): the embedded
   * operator's process runtime, or on Kubernetes the worker Deployments and
   * pods of the worker namespace; absent when this gateway reaches neither
   * (then log reads are empty).
   */
  workers?: WorkerReaderPort;
}
