import { createServer, type Server } from 'node:http';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';
import { join } from 'node:path';
import { WORKER_MAIN } from '@sluice/dataplane';
import { Controller, DeploymentWorkers, LogEventRecorder, ProcessRuntime } from '@sluice/operator';
import { KubeConfig } from '@kubernetes/client-node';
import { type WorkerConfig } from '@sluice/shared/catalog';
import { EmbeddedCluster, KubernetesCluster, reuseConnections } from '@sluice/shared/cluster';
import { SecretBox } from '@sluice/shared/crypto';
import { EmbeddedSecretStore, KubernetesSecretStore, moveManagedSecrets } from '@sluice/shared/secrets';
import { buildApp } from './app.js';
import { workerEnvFor } from './features/connectors/connectors.worker-config.js';
import { attachWebSockets } from './features/logs/logs.socket.js';
import { CatalogStore } from './catalog/store.js';
import { purgeExpired } from './auth/auth.repository.js';
import { Passwords } from './auth/passwords.js';
import { PrincipalCache, principalCacheInvalidation } from './auth/principal-cache.js';
import { TokenService } from './auth/tokens.js';
import type { Config } from './config.js';
import type { GatewayContext } from './context.js';
import { migrateToLatest, openDatabase } from './db/database.js';
import { ensureAdmin } from './features/users/users.bootstrap.js';
import { createMailer } from './mail/mailer.js';
import { MirrorSync } from './mirror/sync.js';
import { releaseOnDeletion } from './features/connectors/connectors.capture-release.js';
import { tokenSource, warehouseHttpOptions } from './features/warehouses/warehouses.engine.js';
import { TaskScheduler } from './features/warehouse-tasks/warehouse-tasks.scheduler.js';
import { SlotMonitor } from './features/monitoring/monitoring.runner.js';
import { autoBackfills } from './features/backfills/backfills.auto.js';
import { backfillRunner, stopBackfillRunner } from './features/backfills/backfills.runner.js';
import { deletionRunner, stopDeletionRunner } from './features/deletions/deletions.runner.js';

export interface RunningGateway {
  ctx: GatewayContext;
  server: Server;
  url: string;
  /** Stops accepting, lets in-flight requests finish, then closes the database. */
  close(): Promise<void>;
}

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options: LoggerOptions = {
    level,
    // Defence in depth: these keys never reach a log line, whatever logs them.
    redact: {
      paths: [
        'password',
        '*.password',
        'token',
        '*.token',
        'access_token',
        '*.sasl_password',
        '*.ssh_private_key',
        '*.ssh_private_key_passphrase',
        'authorization',
        '*.authorization',
      ],
      censor: '<redacted>',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

export async function createContext(
  config: Config,
  log: Logger,
  opts: { pgliteDir?: string; pgliteLoad?: Blob } = {},
): Promise<GatewayContext & { closeDb(): Promise<void> }> {
  const handle = await openDatabase({
    url: config.databaseUrl,
    dataDir: config.dataDir,
    pgliteDir: opts.pgliteDir,
    pgliteLoad: opts.pgliteLoad,
  });
  await migrateToLatest(handle.db);
  const principals = new PrincipalCache(config.principalCacheMs);
  // The cluster and the mirror write through the plain handle: their writes
  // do not touch people's rows, so they need not clear the principal cache.
  const kc = config.clusterAdapter === 'kubernetes' ? kubeConfig(config) : undefined;
  const kubeCluster = (namespace: string | undefined) =>
    new KubernetesCluster({ kubeConfig: kc!, namespace, fieldManager: 'sluice-gateway' });
  const cluster = kc ? kubeCluster(config.namespace) : new EmbeddedCluster(handle.db);
  // Every watched namespace; on Kubernetes one adapter each, so lists and watches stay within the Roles.
  // A connector deleted with kubectl: the gateway drops a PostgreSQL source's
  // slot (it holds the secrets), once the context below exists.
  const deletions: { ctx?: GatewayContext } = {};
  const mirror = new MirrorSync(handle.db, cluster, config.watchNamespaces, log, {
    ...(kc ? { clusterFor: kubeCluster } : {}),
    onDeleting: (object) => {
      if (deletions.ctx) releaseOnDeletion(deletions.ctx, object);
    },
  });
  const secretBox = new SecretBox(config.secretKey);
  const ctx: GatewayContext = {
    config,
    db: handle.db.withPlugin(principalCacheInvalidation(principals)),
    principals,
    dbKind: handle.kind,
    log,
    tokens: new TokenService(config.jwtSecret, config.tokenLifetimeS),
    passwords: new Passwords(config.passwordMinLength, config.bcryptCost),
    mailer: createMailer({ smtpUrl: config.smtpUrl, from: config.mailFrom, dataDir: config.dataDir, log }),
    secrets: secretBox,
    // Kubernetes: Secrets of the worker namespace (config.workerNamespace), which worker pods mount.
    secretStore: kc ? new KubernetesSecretStore(kc) : new EmbeddedSecretStore(handle.db, secretBox),
    cluster,
    catalog: new CatalogStore(cluster, handle.db, config.namespace, log),
    mirror,
    warehouseHttp: warehouseHttpOptions(config),
  };
  await ensureAdmin(ctx);
  // The embedded store keys secrets by namespace: managed secrets of a data
  // directory used with another SLUICE_WORKER_NAMESPACE follow it (the
  // operator does the same on Kubernetes).
  if (!kc) await moveManagedSecrets(ctx.secretStore, config.namespace, config.workerNamespace);
  deletions.ctx = ctx;
  mirror.start();
  const operator = config.embeddedOperator ? startEmbeddedOperator(ctx, log) : undefined;
  // Worker logs (features/logs) are read from the embedded operator's runtime,
  // or on Kubernetes from the worker Deployments and pods of the worker
  // namespace: watched and read only, the operator runs them.
  const workerView =
    !operator && kc
      ? new DeploymentWorkers({
          kubeConfig: kc,
          namespace: config.workerNamespace,
          homeNamespace: config.namespace,
          log,
        })
      : undefined;
  ctx.workers = operator?.runtime ?? workerView;
  // Warehouse tasks: every replica may schedule, runs are claimed in the database.
  const scheduler = config.scheduler.enabled
    ? new TaskScheduler(ctx).start(config.scheduler.intervalMs)
    : undefined;
  // The retained WAL of paused PostgreSQL sources and the binary logs of paused MySQL/MariaDB
  // sources (features/monitoring), with the other periodic jobs.
  const slots = config.scheduler.enabled
    ? new SlotMonitor(ctx).start(config.monitoring.intervalMs)
    : undefined;
  // Backfill runs whose gateway stopped are resumed by the same schedulers' replicas.
  // Their tick also decides the automatic re-snapshots of new subscriptions with `backfill`.
  if (config.scheduler.enabled)
    backfillRunner(ctx).start(config.scheduler.intervalMs, () =>
      autoBackfills(ctx, config.backfills.autoMaxAgeMs),
    );
  // Deletions of teams and environments whose objects are still to be removed (new, or their gateway stopped).
  if (config.scheduler.enabled) deletionRunner(ctx).start(config.scheduler.intervalMs);
  return {
    ...ctx,
    closeDb: async () => {
      await scheduler?.stop();
      await slots?.stop();
      await stopBackfillRunner(ctx);
      await stopDeletionRunner(ctx);
      await operator?.stop();
      await workerView?.close();
      await mirror.stop();
      await handle.close();
    },
  };
}

/** The API server of KUBECONFIG, or of the in-cluster service account. */
function kubeConfig(config: Config): KubeConfig {
  const kc = new KubeConfig();
  if (config.kubeconfig) kc.loadFromFile(config.kubeconfig);
  else kc.loadFromDefault();
  return reuseConnections(kc);
}

/**
 * The operator inside the gateway (one machine, `make run`): the same
 * controller as the operator process, on the embedded cluster, with workers
 * as child processes under the data dir. One process, so no leader election.
 */
function startEmbeddedOperator(
  ctx: GatewayContext,
  log: Logger,
): { runtime: ProcessRuntime; stop(): Promise<void> } {
  const runtime = new ProcessRuntime({
    command: ctx.config.workerCommand ?? [process.execPath, WORKER_MAIN],
    workDir: join(ctx.config.dataDir, 'workers'),
    // Workers get the values of their configuration's secret references as
    // environment variables, as in a pod; they never see the master key's store.
    // Only the references their team is granted (docs/security.md).
    secretEnv: (config) => workerEnvFor(ctx, config as WorkerConfig),
  });
  const opLog = log.child({ component: 'operator' });
  const controller = new Controller({
    cluster: ctx.cluster,
    runtime,
    events: new LogEventRecorder(opLog),
    log: opLog,
    namespaces: [ctx.config.namespace],
    secrets: ctx.secretStore,
    secretNamespace: ctx.config.workerNamespace,
    homeNamespace: ctx.config.namespace,
    monitoringIntervalMs: ctx.config.monitoring.intervalMs,
    slotWalDegradedBytes: ctx.config.monitoring.slotWalDegradedBytes,
    // A Warehouse applied to the cluster is tested as POST /warehouses/{id}/test tests it.
    warehouses: {
      http: ctx.warehouseHttp,
      secrets: ctx.secretStore,
      secretNamespace: ctx.config.workerNamespace,
      scope: async (w) => (await tokenSource(ctx, w.metadata.name, w.spec)).scope,
    },
  });
  const ac = new AbortController();
  const running = controller.run(ac.signal).catch((err: unknown) => {
    opLog.error({ err: (err as Error).message }, 'The embedded operator stopped');
  });
  return {
    runtime,
    stop: async () => {
      ac.abort();
      await running;
      await runtime.close();
    },
  };
}

export async function startGateway(
  config: Config,
  log = createLogger(config.logLevel),
): Promise<RunningGateway> {
  const ctx = await createContext(config, log);
  const { app } = buildApp(ctx);
  const server = createServer(app);
  const sockets = attachWebSockets(app, server);
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const url = `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${port}`;
  const purge = setInterval(
    () => purgeExpired(ctx.db).catch((err: unknown) => log.warn({ err }, 'Purge failed')),
    3600_000,
  );
  purge.unref();
  log.info({ url, database: ctx.dbKind, mode: config.deploymentMode }, 'Sluice gateway listening');
  return {
    ctx,
    server,
    url,
    close: async () => {
      clearInterval(purge);
      sockets.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await ctx.closeDb();
    },
  };
}
