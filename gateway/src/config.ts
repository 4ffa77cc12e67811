import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { isIP } from 'node:net';
import { join, resolve } from 'node:path';
import { isNamespaceName, watchNamespaces } from '@sluice/shared/cluster';
import { warehouseOutboundFromEnv, type WarehouseOutboundSettings } from '@sluice/shared/warehouses';

export type DeploymentMode = 'SELF_HOSTED' | 'CLOUD';

/** Every setting of the service; read once from the environment (README, "Configuration"). */
export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  dataDir: string;
  jwtSecret: string;
  secretKey: string;
  tokenLifetimeS: number;
  allowRegistration: boolean;
  requireVerified: boolean;
  adminEmail: string | undefined;
  adminPassword: string | undefined;
  deploymentMode: DeploymentMode;
  smtpUrl: string | undefined;
  mailFrom: string;
  passwordMinLength: number;
  /** bcrypt cost factor (2^cost rounds). */
  bcryptCost: number;
  bodyLimit: string;
  corsOrigins: string[];
  clusterAdapter: 'embedded' | 'kubernetes';
  /** Kubeconfig file of the Kubernetes adapter; unset: in-cluster service account (or ~/.kube/config). */
  kubeconfig?: string;
  /** Runs the operator inside the gateway (one machine); off when a separate operator runs. */
  embeddedOperator: boolean;
  /** argv of the worker program for the process runtime; default `node <dataplane>/dist/main.js`. */
  workerCommand?: string[];
  /**
   * SLUICE_NAMESPACE: the control plane's own namespace, where objects created
   * through the API go (the release namespace; its Secrets are the gateway's
   * and the operator's, never a worker's).
   */
  namespace: string;
  /**
   * SLUICE_WORKER_NAMESPACE (default: `namespace`): where workers run, their
   * managed Secrets are written and the Secrets secret fields reference live.
   */
  workerNamespace: string;
  /**
   * SLUICE_WATCH_NAMESPACES (the chart sets it, as for the operator): the
   * namespaces the mirror shows, `namespace` first; undefined: every
   * namespace (`*`, cluster scope). Default: `namespace` alone.
   */
  watchNamespaces: string[] | undefined;
  logLevel: string;
  /** How long a stopping gateway keeps serving before it closes its listener (SLUICE_SHUTDOWN_DELAY_MS). */
  shutdownDelayMs: number;
  /** How long a resolved bearer token is reused without a query (0: never). */
  principalCacheMs: number;
  loginMaxPerAccount: number;
  loginMaxPerAddress: number;
  loginWindowS: number;
  /** Mails of forgot-password / request-verify-token per e-mail address and per client address. */
  mailMaxPerAccount: number;
  mailMaxPerAddress: number;
  mailWindowS: number;
  /** How often an open log stream re-checks its token and the caller's access (ms). */
  logStreamRecheckMs: number;
  /**
   * SLUICE_TRUST_PROXY: the proxies whose X-Forwarded-For names the client
   * (the per-address rate limits count by it): `false`, a number of hops, or
   * addresses, subnets and `loopback`/`linklocal`/`uniquelocal` (Express's
   * `trust proxy`, docs/security.md "Rate limits").
   */
  trustProxy: TrustProxy;
  /** Validate every response against its schema (tests; off in production for speed). */
  validateResponses: boolean;
  /** Outbound calls to addresses users configure (warehouses; docs/warehouses.md, "Outbound calls"). */
  outbound: {
    /** CIDRs never connected to (default: private, loopback, link-local, …). */
    denyCidrs: string[] | undefined;
    /** CIDRs allowed even inside a denied range. */
    allowCidrs: string[];
  };
  warehouses: {
    /** Development only: talk plain HTTP to warehouse hosts. */
    allowHttp: boolean;
    /** PEM file of extra CA certificates trusted for warehouse hosts (besides the system's). */
    caFile: string | undefined;
    /** Deadline of one REST call to a warehouse host. */
    httpTimeoutMs: number;
    /** Default and maximum deadline of a relayed statement or a task run (then it is cancelled). */
    statementTimeoutS: number;
    /** Default and maximum number of rows a relayed statement returns. */
    rowLimit: number;
  };
  scheduler: {
    /** Run due warehouse tasks from this process (every replica may: runs are claimed in the database). */
    enabled: boolean;
    intervalMs: number;
  };
  backfills: {
    /**
     * New subscriptions with `backfill` younger than this are re-snapshotted
     * automatically when their stream lacks the source's snapshot (0: never).
     */
    autoMaxAgeMs: number;
  };
  /** Monitoring figures (docs/data-plane.md, "Monitoring"). */
  monitoring: {
    /** How often the embedded operator reads workers' /metrics, and the gateway measures paused slots. */
    intervalMs: number;
    /** Retained WAL of a replication slot past which a connector and its pipelines are Degraded. */
    slotWalDegradedBytes: number;
  };
}

/** The values of Express's `trust proxy` that cannot be fooled by a header the client writes. */
export type TrustProxy = false | number | string[];

type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

function bool(env: Env, key: string, fallback: boolean): boolean {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  if (/^(1|true|yes|on)$/i.test(raw)) return true;
  if (/^(0|false|no|off)$/i.test(raw)) return false;
  throw new ConfigError(`${key} must be true or false, got "${raw}"`);
}

function int(env: Env, key: string, fallback: number, min = 1): number {
  const raw = env[key];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min)
    throw new ConfigError(`${key} must be an integer >= ${min}, got "${raw}"`);
  return n;
}

/**
 * A secret given in the environment, or else generated once and kept in the
 * data directory (mode 0600) so tokens and sealed secrets survive restarts.
 */
function persistentSecret(env: Env, key: string, dataDir: string, file: string): string {
  const given = env[key];
  if (given) {
    if (given.length < 32) throw new ConfigError(`${key} must be at least 32 characters`);
    return given;
  }
  const path = join(dataDir, file);
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const secret = randomBytes(48).toString('base64url');
  writeFileSync(path, secret + '\n', { mode: 0o600 });
  return secret;
}

const PROXY_RANGES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** An address or a subnet (CIDR prefix or IPv4 netmask) as Express's `trust proxy` takes it. */
function isProxyAddress(entry: string): boolean {
  if (PROXY_RANGES.has(entry)) return true;
  const [address = '', range, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (range === undefined) return true;
  if (family === 4 && isIP(range) === 4) return true;
  const bits = Number(range);
  return /^\d{1,3}$/.test(range) && bits <= (family === 4 ? 32 : 128);
}

/**
 * SLUICE_TRUST_PROXY. `true` is refused: it trusts every X-Forwarded-For
 * entry, so any client could name itself a fresh address per request and
 * escape the per-address limits. Neither is guessed into a hop count: one
 * hop too few puts every client behind the proxy into one bucket, one too
 * many lets them forge again, so the operator says which.
 */
function trustProxy(env: Env): TrustProxy {
  const key = 'SLUICE_TRUST_PROXY';
  const raw = (env[key] ?? '').trim();
  if (raw === '' || /^(false|no|off)$/i.test(raw)) return false;
  if (/^(true|yes|on)$/i.test(raw)) {
    throw new ConfigError(
      `${key}=${raw} would trust any X-Forwarded-For a client sends and let it escape the rate limits; ` +
        'set the number of proxies in front of the gateway (e.g. 1) or their addresses (e.g. 10.0.0.0/8,loopback)',
    );
  }
  if (/^\d+$/.test(raw)) return Number(raw) === 0 ? false : Number(raw);
  const entries = raw.split(',').map((s) => s.trim());
  const bad = entries.find((e) => !isProxyAddress(e));
  if (bad !== undefined) {
    throw new ConfigError(
      `${key} must be false, a number of proxy hops, or addresses, subnets, loopback, linklocal or uniquelocal separated by commas, got "${bad}"`,
    );
  }
  return entries;
}

/** SLUICE_WORKER_COMMAND: a JSON array of strings (argv), for a custom worker build or a test worker. */
function workerCommand(env: Env): string[] | undefined {
  const raw = env.SLUICE_WORKER_COMMAND;
  if (!raw) return undefined;
  let argv: unknown;
  try {
    argv = JSON.parse(raw);
  } catch {
    argv = undefined;
  }
  if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === 'string')) {
    throw new ConfigError('SLUICE_WORKER_COMMAND must be a JSON array of strings, e.g. ["node","worker.js"]');
  }
  return argv as string[];
}

/** A namespace setting (SLUICE_NAMESPACE, SLUICE_WORKER_NAMESPACE): a DNS-1123 label; unset: `fallback`. */
function namespace(env: Env, key: string, fallback: string): string {
  const raw = env[key] || fallback;
  if (!isNamespaceName(raw)) {
    throw new ConfigError(`${key} must be a DNS-1123 label, got "${raw}"`);
  }
  return raw;
}

/**
 * SLUICE_OUTBOUND_*_CIDRS and SLUICE_WAREHOUSE_{ALLOW_HTTP,CA_FILE,HTTP_TIMEOUT_MS},
 * read as the operator process reads them for its Warehouse reconciler.
 */
function outboundSettings(env: Env): WarehouseOutboundSettings {
  try {
    return warehouseOutboundFromEnv(env);
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
}

/** SLUICE_WATCH_NAMESPACES: `*` or DNS-1123 labels, comma-separated (shared/src/cluster/watch-namespaces.ts). */
function watched(env: Env, home: string): string[] | undefined {
  const list = watchNamespaces(env.SLUICE_WATCH_NAMESPACES, home);
  const bad = list?.find((ns) => !isNamespaceName(ns));
  if (bad !== undefined) {
    throw new ConfigError(`SLUICE_WATCH_NAMESPACES must be * or namespace names, got "${bad}"`);
  }
  return list;
}

export function loadConfig(env: Env = process.env): Config {
  const dataDir = resolve(env.SLUICE_DATA_DIR || './.sluice');
  const mode = (env.SLUICE_DEPLOYMENT_MODE || 'SELF_HOSTED').toUpperCase();
  if (mode !== 'SELF_HOSTED' && mode !== 'CLOUD') {
    throw new ConfigError(`SLUICE_DEPLOYMENT_MODE must be SELF_HOSTED or CLOUD, got "${mode}"`);
  }
  const cluster = (env.SLUICE_CLUSTER_ADAPTER || 'embedded').toLowerCase();
  if (cluster !== 'embedded' && cluster !== 'kubernetes') {
    throw new ConfigError(`SLUICE_CLUSTER_ADAPTER must be embedded or kubernetes, got "${cluster}"`);
  }
  if (Boolean(env.SLUICE_ADMIN_EMAIL) !== Boolean(env.SLUICE_ADMIN_PASSWORD)) {
    throw new ConfigError('SLUICE_ADMIN_EMAIL and SLUICE_ADMIN_PASSWORD must be set together');
  }
  const home = namespace(env, 'SLUICE_NAMESPACE', 'sluice');
  const outbound = outboundSettings(env);
  return {
    port: int(env, 'PORT', 8080, 0),
    host: env.HOST || '0.0.0.0',
    databaseUrl: env.DATABASE_URL || undefined,
    dataDir,
    jwtSecret: persistentSecret(env, 'SLUICE_JWT_SECRET', dataDir, 'jwt-secret'),
    secretKey: persistentSecret(env, 'SLUICE_MASTER_KEY', dataDir, 'master-key'),
    tokenLifetimeS: int(env, 'SLUICE_TOKEN_LIFETIME_S', 86400),
    allowRegistration: bool(env, 'SLUICE_ALLOW_REGISTRATION', true),
    requireVerified: bool(env, 'SLUICE_REQUIRE_VERIFIED', false),
    adminEmail: env.SLUICE_ADMIN_EMAIL?.toLowerCase() || undefined,
    adminPassword: env.SLUICE_ADMIN_PASSWORD || undefined,
    deploymentMode: mode,
    smtpUrl: env.SMTP_URL || undefined,
    mailFrom: env.SLUICE_MAIL_FROM || 'Sluice <no-reply@sluice.local>',
    passwordMinLength: int(env, 'SLUICE_PASSWORD_MIN_LENGTH', 8),
    bcryptCost: int(env, 'SLUICE_BCRYPT_COST', 12, 4),
    bodyLimit: env.SLUICE_BODY_LIMIT || '1mb',
    corsOrigins: (env.SLUICE_CORS_ORIGINS || '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    clusterAdapter: cluster,
    kubeconfig: env.KUBECONFIG || undefined,
    embeddedOperator: bool(env, 'SLUICE_EMBEDDED_OPERATOR', cluster === 'embedded'),
    workerCommand: workerCommand(env),
    namespace: home,
    workerNamespace: namespace(env, 'SLUICE_WORKER_NAMESPACE', home),
    watchNamespaces: watched(env, home),
    logLevel: env.LOG_LEVEL || 'info',
    shutdownDelayMs: int(env, 'SLUICE_SHUTDOWN_DELAY_MS', 0, 0),
    principalCacheMs: int(env, 'SLUICE_PRINCIPAL_CACHE_MS', 2000, 0),
    loginMaxPerAccount: int(env, 'SLUICE_LOGIN_MAX_PER_ACCOUNT', 10),
    loginMaxPerAddress: int(env, 'SLUICE_LOGIN_MAX_PER_ADDRESS', 100),
    loginWindowS: int(env, 'SLUICE_LOGIN_WINDOW_S', 900),
    mailMaxPerAccount: int(env, 'SLUICE_MAIL_MAX_PER_ACCOUNT', 3),
    mailMaxPerAddress: int(env, 'SLUICE_MAIL_MAX_PER_ADDRESS', 20),
    mailWindowS: int(env, 'SLUICE_MAIL_WINDOW_S', 3600),
    logStreamRecheckMs: int(env, 'SLUICE_LOG_STREAM_RECHECK_MS', 2000, 100),
    trustProxy: trustProxy(env),
    validateResponses: bool(env, 'SLUICE_VALIDATE_RESPONSES', false),
    outbound: { denyCidrs: outbound.denyCidrs, allowCidrs: outbound.allowCidrs },
    warehouses: {
      allowHttp: outbound.allowHttp,
      caFile: outbound.caFile,
      httpTimeoutMs: outbound.httpTimeoutMs,
      statementTimeoutS: int(env, 'SLUICE_WAREHOUSE_STATEMENT_TIMEOUT_S', 300),
      rowLimit: int(env, 'SLUICE_WAREHOUSE_ROW_LIMIT', 1000),
    },
    scheduler: {
      enabled: bool(env, 'SLUICE_SCHEDULER', true),
      intervalMs: int(env, 'SLUICE_SCHEDULER_INTERVAL_MS', 10_000, 100),
    },
    backfills: {
      autoMaxAgeMs: int(env, 'SLUICE_AUTO_BACKFILL_MAX_AGE_HOURS', 168, 0) * 3_600_000,
    },
    monitoring: {
      intervalMs: int(env, 'SLUICE_MONITORING_INTERVAL_MS', 15_000, 100),
      slotWalDegradedBytes: int(env, 'SLUICE_SLOT_WAL_DEGRADED_BYTES', 1024 ** 3),
    },
  };
}
