// The operator as its own process (Kubernetes: the chart's operator
// Deployment, two replicas). Custom resources through the API server; the
// controller runs only while this replica holds the Lease, so the two
// replicas never reconcile at once and the second takes over within the
// lease duration when the first dies. On one machine the gateway runs the
// same controller in-process instead (gateway/src/server.ts).
import { hostname } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { CoordinationV1Api, KubeConfig, type V1PodTemplateSpec } from '@kubernetes/client-node';
import {
  KubernetesCluster,
  isNamespaceName,
  reuseConnections,
  watchNamespaces,
} from '@sluice/shared/cluster';
import { type ClusterPort, type WorkerRuntimePort } from '@sluice/shared/ports';
import { KubernetesSecretStore } from '@sluice/shared/secrets';
import { warehouseHttpOptions, warehouseOutboundFromEnv } from '@sluice/shared/warehouses';
import { Controller } from './controller/controller.js';
import { KubernetesEventRecorder } from './controller/kube-events.js';
import type { Logger } from './controller/logger.js';
import { LeaderElector } from './leader-election.js';
import { KubernetesLeaseStore } from './lease-store-kubernetes.js';
import { DeploymentRuntime } from './runtime/deployment-runtime.js';
import { ProcessRuntime } from './runtime/process-runtime.js';
import { defaultPodTemplate } from './runtime/worker-deployment.js';
import { workerGrants } from './runtime/worker-grants.js';
import { moveToWorkerNamespace } from './runtime/worker-namespace-move.js';
import { WORKER_PROGRAM_PATH } from './runtime/worker-program.js';
import { slotWalDegradedBytes } from './reconcile/slot-retention.js';

const env = process.env;

function jsonLogger(base: Record<string, unknown>): Logger {
  const line = (level: string) => (obj: object, msg?: string) =>
    process.stdout.write(
      `${JSON.stringify({ time: new Date().toISOString(), level, ...base, ...obj, msg })}\n`,
    );
  return { info: line('info'), warn: line('warn'), error: line('error'), debug: () => undefined };
}

async function main(): Promise<void> {
  const log = jsonLogger({ component: 'operator' });
  const kc = new KubeConfig();
  kc.loadFromDefault(); // in-cluster service account, or KUBECONFIG for development
  reuseConnections(kc);
  const namespace = env.SLUICE_NAMESPACE || env.POD_NAMESPACE || 'default';
  const namespaces = watchNamespaces(env.SLUICE_WATCH_NAMESPACES, namespace);
  // SLUICE_WORKER_NAMESPACE: workers and their Secrets, apart from the control plane's (docs/security.md).
  const workerNamespace = env.SLUICE_WORKER_NAMESPACE || namespace;
  if (!isNamespaceName(workerNamespace)) {
    throw new Error(`SLUICE_WORKER_NAMESPACE must be a DNS-1123 label, got "${workerNamespace}"`);
  }
  // One adapter per watched namespace: lists and watches stay within the Roles.
  const clusterFor = (ns: string | undefined) =>
    new KubernetesCluster({ kubeConfig: kc, namespace: ns, fieldManager: 'sluice-operator' });
  const identity = env.POD_NAME || hostname();
  const runtime = workerRuntime(kc, { namespace: workerNamespace, homeNamespace: namespace }, log, (ns) =>
    clusterFor(ns),
  );
  const events = new KubernetesEventRecorder(kc, 'sluice-operator', log);
  const controller = new Controller({
    cluster: clusterFor(namespaces ? namespace : undefined),
    clusterFor,
    runtime,
    events,
    // A connector deleted with kubectl takes its managed Secret with it.
    secrets: new KubernetesSecretStore(kc),
    secretNamespace: workerNamespace,
    homeNamespace: namespace,
    log,
    ...(namespaces ? { namespaces } : {}),
    // SLUICE_OPERATOR_CONCURRENCY: reconciles at once (different objects).
    concurrency: Number(env.SLUICE_OPERATOR_CONCURRENCY || 8),
    // SLUICE_MONITORING_INTERVAL_MS: how often workers' /metrics are read (docs/data-plane.md, "Monitoring").
    monitoringIntervalMs: Number(env.SLUICE_MONITORING_INTERVAL_MS || 15_000),
    slotWalDegradedBytes: slotWalDegradedBytes(env),
    // Warehouses: tested under the gateway's outbound settings, read from the same
    // variables (SLUICE_OUTBOUND_*_CIDRS, SLUICE_WAREHOUSE_*; docs/warehouses.md).
    warehouses: {
      http: warehouseHttpOptions(warehouseOutboundFromEnv(env)),
      secrets: new KubernetesSecretStore(kc),
      secretNamespace: workerNamespace,
      homeNamespace: namespace,
    },
  });
  const stop = new AbortController();
  for (const sig of ['SIGTERM', 'SIGINT'] as const) process.once(sig, () => stop.abort());
  // The leader first moves what an earlier layout left in the control plane's namespace.
  const move = () =>
    moveToWorkerNamespace({
      kubeConfig: kc,
      secrets: new KubernetesSecretStore(kc),
      from: namespace,
      to: workerNamespace,
      log,
    });
  const run = (signal: AbortSignal) =>
    move()
      .then(() => controller.run(signal))
      .catch((err: unknown) => log.error({ err: (err as Error).message }, 'controller failed'));
  if (env.SLUICE_LEADER_ELECTION === 'false') {
    await run(stop.signal);
  } else {
    const elector = new LeaderElector({
      store: new KubernetesLeaseStore({
        api: kc.makeApiClient(CoordinationV1Api),
        namespace,
        name: env.SLUICE_LEASE_NAME || 'sluice-operator',
      }),
      identity,
      // SLUICE_LEASE_DURATION_S (default 15): how long a dead leader holds the lease.
      ...leaseTimings(Number(env.SLUICE_LEASE_DURATION_S || 15) * 1000),
      onStartedLeading: (signal) => {
        log.info({ identity }, 'leading');
        return run(signal);
      },
      onStoppedLeading: () => log.info({ identity }, 'no longer leading'),
      onNewLeader: (leader) => log.info({ leader }, 'leader elected'),
    });
    // A replica that loses the lease campaigns again until it is stopped.
    while (!stop.signal.aborted) await elector.run(stop.signal);
  }
  await runtime.close();
  // The last transitions' Events, unless the API server is gone.
  await Promise.race([events.flush(), new Promise((r) => setTimeout(r, 5000).unref())]);
}

/**
 * SLUICE_WORKER_RUNTIME: `kubernetes` (default; one Deployment per worker in
 * the worker namespace, from the pod template file the chart mounts at
 * SLUICE_WORKER_POD_TEMPLATE, or from SLUICE_WORKER_IMAGE alone) or `process`
 * (workers as child processes of the operator; development and tests).
 */
function workerRuntime(
  kc: KubeConfig,
  { namespace, homeNamespace }: { namespace: string; homeNamespace: string },
  log: Logger,
  clusterFor: (ns: string) => ClusterPort,
): WorkerRuntimePort {
  const kind = env.SLUICE_WORKER_RUNTIME ?? 'kubernetes';
  if (kind === 'process') {
    return new ProcessRuntime({
      command: env.SLUICE_WORKER_COMMAND
        ? (JSON.parse(env.SLUICE_WORKER_COMMAND) as string[])
        : [process.execPath, WORKER_PROGRAM_PATH],
      workDir: join(env.SLUICE_DATA_DIR || '/tmp/sluice', 'workers'),
    });
  }
  if (kind !== 'kubernetes')
    throw new Error(`SLUICE_WORKER_RUNTIME must be kubernetes or process, not ${kind}`);
  let podTemplate: V1PodTemplateSpec;
  if (env.SLUICE_WORKER_POD_TEMPLATE) {
    podTemplate = JSON.parse(readFileSync(env.SLUICE_WORKER_POD_TEMPLATE, 'utf8')) as V1PodTemplateSpec;
  } else if (env.SLUICE_WORKER_IMAGE) {
    podTemplate = defaultPodTemplate(env.SLUICE_WORKER_IMAGE);
  } else {
    throw new Error('the kubernetes worker runtime needs SLUICE_WORKER_POD_TEMPLATE or SLUICE_WORKER_IMAGE');
  }
  // Worker pods get only the secret references their team is granted (docs/security.md).
  const grantedRefs = workerGrants({
    secrets: new KubernetesSecretStore(kc),
    secretNamespace: namespace,
    clusterFor,
  });
  return new DeploymentRuntime({ kubeConfig: kc, namespace, homeNamespace, podTemplate, log, grantedRefs });
}

/** client-go's proportions: renew deadline 2/3 of the lease, retry every 2 s at most. */
function leaseTimings(leaseDurationMs: number) {
  return {
    leaseDurationMs,
    renewDeadlineMs: Math.round((leaseDurationMs * 2) / 3),
    retryPeriodMs: Math.min(2000, Math.round(leaseDurationMs / 7.5)),
  };
}

main().catch((err: unknown) => {
  process.stderr.write(`sluice-operator: ${(err as Error).message}\n`);
  process.exit(1);
});
