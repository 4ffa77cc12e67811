import { describe, it } from '@jest/globals';
import type { V1CustomResourceDefinition } from '@kubernetes/client-node';

/**
 * Tests against a real Kubernetes API server. `scripts/with-kube.sh <command>`
 * starts a throw-away kube-apiserver + etcd and names its kubeconfig in
 * SLUICE_TEST_KUBECONFIG (docs/testing-kubernetes.md); `make test` runs the
 * suite that way with SLUICE_REQUIRE_KUBE=1.
 */

const SKIP_REASON = 'skipped: no API server; run under scripts/with-kube.sh';

/** The kubeconfig file of the test API server, when there is one. */
export function testKubeConfig(): string | undefined {
  const path = process.env.SLUICE_TEST_KUBECONFIG;
  return path ? path : undefined;
}

/**
 * `describe` for tests that need the API server. Without one, the block is
 * reported as skipped with the reason in its title, unless
 * SLUICE_REQUIRE_KUBE=1, in which case it fails: `make test` never skips it.
 */
export function describeWithKube(name: string, fn: () => void): void {
  if (testKubeConfig()) {
    describe(name, fn);
  } else if (process.env.SLUICE_REQUIRE_KUBE === '1') {
    describe(name, () => {
      it('needs a Kubernetes API server', () => {
        throw new Error(
          'SLUICE_REQUIRE_KUBE=1 but SLUICE_TEST_KUBECONFIG is not set: run the tests under scripts/with-kube.sh',
        );
      });
    });
  } else {
    // A file whose tests are all skipped gets no per-test lines in jest's
    // report: say why here too.
    console.warn(`${name}: ${SKIP_REASON}`);
    describe.skip(`${name} (${SKIP_REASON})`, fn);
  }
}

/**
 * An API server of the test file's own (same binaries, its own etcd), for
 * tests that need cluster-wide things no other file may see — such as CRDs
 * of the sluice.dev kinds with another schema. Started through
 * scripts/with-kube.sh, which stops it when its stdin closes.
 */
export async function startPrivateApiServer(): Promise<{ kubeconfig: string; stop(): Promise<void> }> {
  const { spawn } = await import('node:child_process');
  const { resolve } = await import('node:path');
  const script = resolve(import.meta.dirname, '../../scripts/with-kube.sh');
  const env = { ...process.env };
  delete env.SLUICE_TEST_KUBECONFIG;
  const child = spawn(script, ['sh', '-c', 'echo "KUBECONFIG=$SLUICE_TEST_KUBECONFIG"; cat >/dev/null'], {
    env,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const exited = new Promise<void>((done) => child.once('close', () => done()));
  const kubeconfig = await new Promise<string>((done, fail) => {
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /KUBECONFIG=(\S+)/.exec(out);
      if (m) done(m[1] as string);
    });
    void exited.then(() => fail(new Error(`with-kube.sh ended before the API server was ready:\n${stderr}`)));
  });
  return {
    kubeconfig,
    stop: async () => {
      child.stdin.end();
      await exited;
    },
  };
}

/**
 * Installs the generated CRDs of crds/ (once per API server: a 409 means
 * another test file of the run did it) and waits until they are served.
 */
export async function installCrds(kubeconfig: string): Promise<void> {
  const { readdirSync, readFileSync } = await import('node:fs');
  const { join, resolve } = await import('node:path');
  const { ApiextensionsV1Api, KubeConfig, loadYaml } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const dir = resolve(import.meta.dirname, '../../crds');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
    // loadYaml maps the file onto the client's model (x-kubernetes-* keys included).
    const crd = loadYaml<V1CustomResourceDefinition>(readFileSync(join(dir, file), 'utf8'));
    await api.createCustomResourceDefinition({ body: crd }).catch((e: { code?: number }) => {
      if (e.code !== 409) throw e;
    });
    for (let i = 0; ; i++) {
      const got = await api.readCustomResourceDefinition({ name: crd.metadata?.name ?? '' });
      if (got.status?.conditions?.some((c) => c.type === 'Established' && c.status === 'True')) break;
      if (i > 150) throw new Error(`${crd.metadata?.name} is not established`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
