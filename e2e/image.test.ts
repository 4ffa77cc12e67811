import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { CoordinationV1Api, CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { installCrds, testKubeConfig } from '@sluice/testing/kube';

// The Sluice image as `make image` builds it (scripts/image/build.sh,
// docs/image.md), started the way the chart starts it: one image, three
// commands, as uid 10001 on a read-only root file system, with the host's
// network (podman, rootful). The image is the one .sluice/image.env names;
// when none is built and this machine can build it (root, with buildah and
// podman or apt-get to install them), the file builds it first (cached).

const ROOT = resolve(import.meta.dirname, '..');
const IMAGE_ENV = join(ROOT, '.sluice/image.env');
const UID = 10001;
// podman raises the open-files and process limits by default; root on these
// machines lacks CAP_SYS_RESOURCE, so runc may only keep or lower them.
const ULIMITS = ['--ulimit', 'nofile=20000:20000', '--ulimit', 'nproc=4096:4096'];

const has = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`]).status === 0;
const isRoot = process.getuid?.() === 0;

/** The image .sluice/image.env names, when it is in the local store. */
function builtImage(): string | undefined {
  if (!existsSync(IMAGE_ENV) || !has('podman')) return undefined;
  const name = /^SLUICE_IMAGE=(.+)$/m.exec(readFileSync(IMAGE_ENV, 'utf8'))?.[1];
  if (!name) return undefined;
  return spawnSync('podman', ['image', 'exists', name]).status === 0 ? name : undefined;
}

function skipReason(): string | undefined {
  if (!isRoot) return 'needs root: the image is built and run with rootful buildah and podman';
  if (builtImage() || (has('buildah') && has('podman')) || has('apt-get')) return undefined;
  return 'the image is not built (.sluice/image.env) and buildah/podman are missing (no apt-get to install them): run `make image`';
}

const reason = skipReason();
if (reason && process.env.SLUICE_REQUIRE_IMAGE !== '1') console.warn(`the Sluice image: ${reason}`);
const describeImage = reason && process.env.SLUICE_REQUIRE_IMAGE !== '1' ? describe.skip : describe;

async function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => done(port));
    });
    s.on('error', fail);
  });
}

/** Waits for the gateway's /api/livez on 127.0.0.1; on a timeout, fails with its logs. */
async function expectLivez(port: number, logs: () => string): Promise<void> {
  const end = Date.now() + 90_000;
  let status = 0;
  while (Date.now() < end && status !== 200) {
    status = await fetch(`http://127.0.0.1:${port}/api/livez`).then(
      (r) => r.status,
      () => 0,
    );
    if (status !== 200) await new Promise((r) => setTimeout(r, 500));
  }
  expect({ status, logs: status === 200 ? '' : logs() }).toEqual({ status: 200, logs: '' });
}

describeImage(`the Sluice image${reason ? ` (${reason})` : ''}`, () => {
  let image = '';
  const containers: string[] = [];
  const dirs: string[] = [];
  let n = 0;

  beforeAll(() => {
    if (reason) throw new Error(`SLUICE_REQUIRE_IMAGE=1 but ${reason}`);
    if (!builtImage()) execFileSync(join(ROOT, 'scripts/image/build.sh'), { cwd: ROOT, stdio: 'inherit' });
    image = builtImage() ?? '';
    expect(image).toMatch(/^localhost\/sluice:/);
  }, 20 * 60_000);

  afterAll(() => {
    if (containers.length) spawnSync('podman', ['rm', '--force', '--ignore', '--time', '0', ...containers]);
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** `podman run` as the chart runs pods: uid 10001, read-only root, /tmp a tmpfs; host network. */
  function runArgs(extra: string[], args: string[]): { name: string; argv: string[] } {
    const name = `sluice-image-test-${process.pid}-${++n}`;
    containers.push(name);
    const argv = [
      'run',
      '--name',
      name,
      '--network',
      'host',
      '--read-only',
      '--user',
      `${UID}:${UID}`,
      '--tmpfs',
      '/tmp:rw,mode=1777',
      ...ULIMITS,
      ...extra,
      image,
      ...args,
    ];
    return { name, argv };
  }

  const podman = (args: string[], timeout = 120_000) =>
    spawnSync('podman', args, { encoding: 'utf8', timeout, maxBuffer: 64 << 20 });

  /** A host directory the container user owns, as a volume (the chart's emptyDir). */
  function ownedDir(): string {
    const dir = mkdtempSync(join(tmpdir(), 'sluice-image-test-'));
    dirs.push(dir);
    chownSync(dir, UID, UID);
    return dir;
  }

  it('runs as uid 10001 with node as the entrypoint and the gateway as the default command', () => {
    const config = JSON.parse(podman(['image', 'inspect', '--format', '{{json .Config}}', image]).stdout) as {
      User: string;
      Entrypoint: string[];
      Cmd: string[];
    };
    expect(config).toMatchObject({
      User: '10001:10001',
      Entrypoint: ['node'],
      Cmd: ['gateway/dist/main.js'],
    });
    const r = podman(['run', '--rm', ...ULIMITS, image, '-p', 'process.getuid() + ":" + process.getgid()']);
    expect(r.stdout.trim()).toBe('10001:10001');
  });

  it('holds no sources, tests or compilers: only the compiled workspaces and production node_modules', () => {
    const script = [
      // Everything under /app but the dependencies: package.json and dist/ output.
      'find /app -path /app/node_modules -prune -o -type f -print',
      'echo ---',
      'for c in gcc cc c++ g++ clang make ld as tsc; do command -v "$c"; done',
      'ls -d /app/node_modules/typescript /app/node_modules/jest /app/node_modules/@swc 2>/dev/null',
      'true',
    ].join('; ');
    const r = podman(['run', '--rm', ...ULIMITS, '--entrypoint', 'sh', image, '-c', script]);
    expect(r.status).toBe(0);
    const [appFiles = '', tools = ''] = r.stdout.split('---\n');
    const files = appFiles.trim().split('\n');
    expect(files).toContain('/app/gateway/dist/main.js');
    expect(files).toContain('/app/operator/dist/main.js');
    expect(files).toContain('/app/dataplane/dist/main.js');
    const unexpected = files.filter(
      (f) =>
        !/^\/app\/(package\.json|(shared|dataplane|gateway|operator)\/(package\.json|dist\/.+\.(js|js\.map|d\.ts|d\.ts\.map)|dist\/\.tsbuildinfo))$/.test(
          f,
        ) || /\/(src|test)\/|\.test\.js$/.test(f),
    );
    expect(unexpected).toEqual([]);
    expect(tools.trim()).toBe('');
  });

  it('serves the gateway: /livez on 127.0.0.1 on embedded PGlite, and stops cleanly on SIGTERM', async () => {
    const port = await freePort();
    const { name, argv } = runArgs(
      [
        '--detach',
        '--volume',
        `${ownedDir()}:/var/lib/sluice`,
        '--env',
        `PORT=${port}`,
        '--env',
        'HOST=127.0.0.1',
      ],
      [],
    );
    const started = podman(argv);
    expect(started.stderr).toBe('');
    await expectLivez(port, () => podman(['logs', name]).stdout);
    expect(podman(['exec', name, 'id', '-u']).stdout.trim()).toBe(String(UID));
    // The root file system is read-only for the running gateway too.
    expect(podman(['exec', name, 'touch', '/app/x']).status).not.toBe(0);
    expect(podman(['stop', '--time', '20', name]).status).toBe(0);
    expect(podman(['inspect', '--format', '{{.State.ExitCode}}', name]).stdout.trim()).toBe('0');
  });

  it('exits with a clear message when the worker has no configuration', () => {
    const r = podman(runArgs(['--rm'], ['dataplane/dist/main.js']).argv);
    expect(r.status).toBe(2);
    expect(r.stdout + r.stderr).toContain('SLUICE_WORKER_CONFIG is not set');
  });

  it('exits with a clear message when the operator has no worker runtime settings', () => {
    const r = podman(runArgs(['--rm'], ['operator/dist/main.js']).argv);
    expect(r.status).toBe(1);
    expect(r.stdout + r.stderr).toContain('needs SLUICE_WORKER_POD_TEMPLATE or SLUICE_WORKER_IMAGE');
  });

  // The runtime a kubelet drives: a containerd of this test's own (its root,
  // state and socket in a temporary directory), the image imported from the
  // OCI archive into the `k8s.io` namespace, the gateway started with `ctr run`.
  // Opt-in (SLUICE_TEST_CONTAINERD=1): run by hand it passes, but under
  // `make test` the task sometimes exits at once or cannot load libdl, which
  // is not yet understood (docs/image.md, "Under containerd").
  const containerdWhy = !(has('containerd') && has('ctr'))
    ? 'containerd is not installed'
    : process.env.SLUICE_TEST_CONTAINERD !== '1'
      ? 'opt-in: SLUICE_TEST_CONTAINERD=1'
      : '';
  (containerdWhy ? it.skip : it)(
    `serves the gateway under containerd, imported from the OCI archive${containerdWhy ? ` (${containerdWhy})` : ''}`,
    async () => {
      const archive = /^SLUICE_IMAGE_ARCHIVE=(.+)$/m.exec(readFileSync(IMAGE_ENV, 'utf8'))?.[1] ?? '';
      expect(existsSync(archive)).toBe(true);
      const dir = mkdtempSync(join(tmpdir(), 'sluice-containerd-'));
      const sock = join(dir, 'containerd.sock');
      const daemon = spawn(
        'containerd',
        [
          '--root',
          join(dir, 'root'),
          '--state',
          join(dir, 'state'),
          '--address',
          sock,
          '--log-level',
          'warn',
        ],
        { stdio: 'ignore' },
      );
      const ctr = (...a: string[]) =>
        spawnSync('ctr', ['--address', sock, '--namespace', 'k8s.io', ...a], {
          encoding: 'utf8',
          timeout: 120_000,
        });
      const name = `sluice-image-test-${process.pid}-ctr`;
      try {
        const end = Date.now() + 30_000;
        while (Date.now() < end && ctr('version').status !== 0) await new Promise((r) => setTimeout(r, 300));
        const imported = ctr('images', 'import', archive);
        expect(imported.stderr).toBe('');
        expect(ctr('images', 'ls', '--quiet').stdout.split('\n')).toContain(image);
        const port = await freePort();
        const run = ctr(
          'run',
          '--detach',
          '--net-host',
          '--read-only',
          '--mount',
          `type=bind,src=${ownedDir()},dst=/var/lib/sluice,options=rbind:rw`,
          '--mount',
          'type=tmpfs,src=tmpfs,dst=/tmp,options=mode=1777',
          '--env',
          `PORT=${port}`,
          '--env',
          'HOST=127.0.0.1',
          image,
          name,
        );
        expect(run.stderr).toBe('');
        await expectLivez(port, () => ctr('tasks', 'ls').stdout);
        // `ctr run` takes the user from the image.
        expect(ctr('tasks', 'exec', '--exec-id', 'id', name, 'id', '-u').stdout.trim()).toBe(String(UID));
      } finally {
        ctr('tasks', 'kill', '--signal', 'SIGKILL', name);
        for (let i = 0; i < 50 && ctr('tasks', 'delete', name).status !== 0; i++) {
          if (!ctr('tasks', 'ls', '--quiet').stdout.includes(name)) break;
          await new Promise((r) => setTimeout(r, 200));
        }
        ctr('containers', 'delete', name);
        daemon.kill('SIGTERM');
        await new Promise((r) => (daemon.exitCode === null ? daemon.once('exit', r) : r(undefined)));
        // Whatever containerd left mounted below its directory (snapshots), deepest first.
        const mounts = readFileSync('/proc/mounts', 'utf8')
          .split('\n')
          .map((l) => l.split(' ')[1] ?? '')
          .filter((m) => m.startsWith(dir))
          .sort()
          .reverse();
        for (const m of mounts) spawnSync('umount', [m]);
        rmSync(dir, { recursive: true, force: true });
      }
    },
    180_000,
  );

  const kubeconfig = testKubeConfig();
  (kubeconfig ? it : it.skip)(
    'runs the operator against the test API server: it takes the Lease in its namespace, and stops on SIGTERM',
    async () => {
      // The kubeconfig holds an admin token: a private copy that only the container user reads.
      const dir = ownedDir();
      const config = join(dir, 'kubeconfig');
      copyFileSync(kubeconfig as string, config);
      chownSync(config, UID, UID);
      chmodSync(config, 0o600);
      // The operator lists and watches the sluice.dev kinds: their CRDs first (a fresh API server has none).
      await installCrds(kubeconfig as string);
      const namespace = `image-smoke-${process.pid}-${Date.now() % 100000}`;
      const kc = new KubeConfig();
      kc.loadFromFile(config);
      await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
      try {
        const { name, argv } = runArgs(
          [
            '--detach',
            '--volume',
            `${config}:/etc/sluice/kubeconfig:ro`,
            '--env',
            'KUBECONFIG=/etc/sluice/kubeconfig',
            '--env',
            `SLUICE_NAMESPACE=${namespace}`,
            '--env',
            `SLUICE_WORKER_IMAGE=${image}`,
          ],
          ['operator/dist/main.js'],
        );
        expect(podman(argv).status).toBe(0);
        const leases = kc.makeApiClient(CoordinationV1Api);
        const end = Date.now() + 60_000;
        let holder: string | undefined;
        while (Date.now() < end && !holder) {
          holder = await leases.readNamespacedLease({ name: 'sluice-operator', namespace }).then(
            (l) => l.spec?.holderIdentity ?? undefined,
            () => undefined,
          );
          if (!holder) await new Promise((r) => setTimeout(r, 500));
        }
        expect({ holder: Boolean(holder), logs: holder ? '' : podman(['logs', name]).stdout }).toEqual({
          holder: true,
          logs: '',
        });
        expect(podman(['logs', name]).stdout).toContain('operator caches synced');
        expect(podman(['stop', '--time', '20', name]).status).toBe(0);
        expect(podman(['inspect', '--format', '{{.State.ExitCode}}', name]).stdout.trim()).toBe('0');
      } finally {
        await kc
          .makeApiClient(CoreV1Api)
          .deleteNamespace({ name: namespace })
          .catch(() => undefined);
      }
    },
  );
});
