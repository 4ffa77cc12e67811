// `node operator/dist/uninstall/main.js`: the first container of the chart's
// pre-delete hook (charts/sluice/README.md, "Uninstalling"). Stops the
// control plane and removes every worker; the gateway's program
// (gateway/dist/uninstall/main.js) runs next. Prints what it did, also into
// SLUICE_UNINSTALL_REPORT when set (Helm prints only the logs of the Job's
// last container: that one prints this file first); exits 1 when something
// is left running.
import { writeFileSync } from 'node:fs';
import { KubeConfig } from '@kubernetes/client-node';
import { isNamespaceName } from '@sluice/shared/cluster';
import { stopWorkers } from './stop-workers.js';

const DEFAULT_TIMEOUT_S = 120;

async function main(): Promise<void> {
  const env = process.env;
  const namespace = env.SLUICE_NAMESPACE || env.POD_NAMESPACE || 'default';
  const workerNamespace = env.SLUICE_WORKER_NAMESPACE || namespace;
  if (!isNamespaceName(workerNamespace)) {
    throw new Error(`SLUICE_WORKER_NAMESPACE must be a DNS-1123 label, got "${workerNamespace}"`);
  }
  const timeoutS = Number(env.SLUICE_UNINSTALL_STOP_TIMEOUT_S || DEFAULT_TIMEOUT_S);
  if (!Number.isSafeInteger(timeoutS) || timeoutS < 1) {
    throw new Error(`SLUICE_UNINSTALL_STOP_TIMEOUT_S must be a positive integer, got "${timeoutS}"`);
  }
  const kc = new KubeConfig();
  kc.loadFromDefault(); // the hook's service account, or KUBECONFIG
  const report = await stopWorkers({
    kubeConfig: kc,
    namespace,
    // SLUICE_UNINSTALL_STOP: the control plane's Deployments, comma-separated (the chart names them).
    controlPlane: (env.SLUICE_UNINSTALL_STOP ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
    workerNamespace,
    timeoutMs: timeoutS * 1000,
  });
  const names = (list: string[]) => (list.length ? ` (${list.join(', ')})` : '');
  const lines = [
    `control plane stopped: ${report.controlPlane.length} Deployment(s) at 0 replicas${names(report.controlPlane)}`,
    `worker Deployments deleted in ${workerNamespace}: ${report.workerDeployments.length}; no worker pod left`,
  ].map((line) => `sluice uninstall: ${line}\n`);
  process.stdout.write(lines.join(''));
  if (env.SLUICE_UNINSTALL_REPORT) writeFileSync(env.SLUICE_UNINSTALL_REPORT, lines.join(''));
}

main().catch((err: unknown) => {
  console.error(`sluice uninstall: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
