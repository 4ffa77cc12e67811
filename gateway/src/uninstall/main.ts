// `node gateway/dist/uninstall/main.js`: the second container of the chart's
// pre-delete hook (charts/sluice/README.md, "Uninstalling"), after
// operator/dist/uninstall/main.js stopped the control plane and the workers.
// Releases the captures (with SLUICE_UNINSTALL_RELEASE_CAPTURES=true), deletes
// the managed Secrets, removes Sluice's finalizers; prints what it did (names
// and counts, never a value). Exits 1 when a slot could not be dropped, after
// everything else is done, so `helm uninstall` stops and says so. Helm
// prints this container's log (the Job's hook-output-log-policy), so the
// first step's report (SLUICE_UNINSTALL_REPORT) is printed first.
import { existsSync, readFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { KubernetesCluster, reuseConnections } from '@sluice/shared/cluster';
import { KubernetesSecretStore } from '@sluice/shared/secrets';
import { CatalogStore } from '../catalog/store.js';
import { ConfigError, loadConfig } from '../config.js';
import { openDatabase } from '../db/database.js';
import { captureReleaser, cleanUpAfterWorkers, type CleanupReport } from './uninstall.cleanup.js';

async function main(): Promise<number> {
  const earlier = process.env.SLUICE_UNINSTALL_REPORT;
  if (earlier && existsSync(earlier)) process.stdout.write(readFileSync(earlier, 'utf8'));
  const config = loadConfig();
  if (config.clusterAdapter !== 'kubernetes') {
    throw new ConfigError('the uninstall clean-up is for Kubernetes (SLUICE_CLUSTER_ADAPTER=kubernetes)');
  }
  const flag = process.env.SLUICE_UNINSTALL_RELEASE_CAPTURES ?? 'true';
  if (flag !== 'true' && flag !== 'false') {
    throw new ConfigError(`SLUICE_UNINSTALL_RELEASE_CAPTURES must be true or false, got "${flag}"`);
  }
  const log = pino({ level: config.logLevel });
  const kc = new KubeConfig();
  if (config.kubeconfig) kc.loadFromFile(config.kubeconfig);
  else kc.loadFromDefault();
  reuseConnections(kc);
  const clusterFor = (namespace: string | undefined) =>
    new KubernetesCluster({ kubeConfig: kc, namespace, fieldManager: 'sluice-uninstall' });
  const secretStore = new KubernetesSecretStore(kc);
  // The service database only to release captures (a connector's team and its grants).
  const handle =
    flag === 'true' ? await openDatabase({ url: config.databaseUrl, dataDir: config.dataDir }) : undefined;
  try {
    const report = await cleanUpAfterWorkers({
      clusterFor,
      namespaces: config.watchNamespaces,
      secretStore,
      workerNamespace: config.workerNamespace,
      ...(handle
        ? {
            releaseCapture: captureReleaser({
              config,
              db: handle.db,
              log,
              secretStore,
              catalog: new CatalogStore(clusterFor(config.namespace), handle.db, config.namespace, log),
            }),
          }
        : {}),
    });
    print(report, config.workerNamespace);
    return report.captureFailures.length ? 1 : 0;
  } finally {
    await handle?.close();
  }
}

function print(r: CleanupReport, workerNamespace: string): void {
  const say = (line: string) => console.log(`sluice uninstall: ${line}`);
  const names = (list: string[]) => (list.length ? ` (${list.join(', ')})` : '');
  if (r.slotsKept.length)
    say(
      `replication slots kept (uninstall.releaseCaptures=false): ${r.slotsKept.length}${names(r.slotsKept)}`,
    );
  else
    say(
      `replication slots dropped: ${r.slotsReleased.length}${names(r.slotsReleased)}` +
        (r.slotsAlreadyReleased.length
          ? `; released by an earlier run: ${r.slotsAlreadyReleased.length}`
          : ''),
    );
  if (r.topicsKept.length)
    say(
      `position topics kept (uninstall.releaseCaptures=false): ${r.topicsKept.length}${names(r.topicsKept)}`,
    );
  else if (r.topicsDeleted.length)
    say(`position topics deleted: ${r.topicsDeleted.length}${names(r.topicsDeleted)}`);
  for (const f of r.captureFailures) {
    if ('slot' in f.capture)
      say(
        `the replication slot ${f.capture.slot} of connector ${f.connector} was not dropped (${f.reason}); ` +
          `drop it on the source: SELECT pg_drop_replication_slot('${f.capture.slot}')`,
      );
    else
      say(
        `the position topic ${f.capture.topic} of connector ${f.connector} was not deleted (${f.reason}); ` +
          `delete it on the platform broker`,
      );
  }
  say(`managed Secrets deleted in ${workerNamespace}: ${r.secretsDeleted}`);
  if (r.secretsKept.length)
    say(`managed Secrets kept so that a new run can drop their slots: ${r.secretsKept.join(', ')}`);
  say(
    `Sluice finalizers removed from ${r.finalizersRemoved} object(s); sluice.dev objects kept: ${r.objectsKept}`,
  );
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    console.error(`sluice uninstall: ${err instanceof Error ? err.message : String(err)}`);
    process.exit(err instanceof ConfigError ? 2 : 1);
  },
);
