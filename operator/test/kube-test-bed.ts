import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { KubernetesCluster } from '@sluice/shared/cluster';
import { installCrds, testKubeConfig } from '@sluice/testing/kube';
import { ProcessRuntime } from '../src/runtime/process-runtime.js';

// What an operator test on the test API server (SLUICE_TEST_KUBECONFIG)
// stands on: a namespace of its own with Sluice's CRDs installed, and
// workers that are local processes running the scripted stand-in.

const SCRIPTED_WORKER = resolve(import.meta.dirname, '../../testing/fixtures/scripted-worker.mjs');

/**
 * Loads `kc` from the test kubeconfig, installs the CRDs, creates namespace
 * `ns` and returns the cluster adapter scoped to it.
 */
export async function testNamespace(kc: KubeConfig, ns: string): Promise<KubernetesCluster> {
  kc.loadFromFile(testKubeConfig() as string);
  await installCrds(testKubeConfig() as string);
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: ns } } });
  return new KubernetesCluster({ kubeConfig: kc, namespace: ns });
}

/** A runtime of scripted workers, in a fresh temporary directory named from `name`; readiness polled every 50 ms. */
export function scriptedRuntime(name: string): ProcessRuntime {
  return new ProcessRuntime({
    command: [process.execPath, SCRIPTED_WORKER],
    workDir: mkdtempSync(join(tmpdir(), `sluice-${name}-`)),
    readinessIntervalMs: 50,
  });
}
