import { AppsV1Api, CoreV1Api, type KubeConfig, type V1Deployment } from '@kubernetes/client-node';
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';

// What the full-cluster suites (k3s.e2e.test.ts, node.e2e.test.ts) share: the
// commands they run, the chart's labels, waiting with diagnostics a user would
// look at, and the REST API as a user's HTTP client calls it.

export const ROOT = resolve(import.meta.dirname, '../..');
export const CHART = join(ROOT, 'charts/sluice');
export const MINUTE = 60_000;

/* eslint-disable @typescript-eslint/no-explicit-any -- JSON bodies and custom objects are plain data */
export type Any = any;

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Runs a command; never throws (the exit code and the output together). */
export function run(
  cmd: string,
  args: string[],
  timeoutMs = 10 * MINUTE,
): Promise<{ code: number; out: string }> {
  return new Promise((done) => {
    execFile(cmd, args, { cwd: ROOT, timeout: timeoutMs, maxBuffer: 64 << 20 }, (err, stdout, stderr) =>
      done({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, out: `${stdout}${stderr}` }),
    );
  });
}

/** Helm, built from Go modules on first use (scripts/tools/ensure-tool.sh). */
export async function ensureHelm(): Promise<string> {
  const tool = await run('bash', [join(ROOT, 'scripts/tools/ensure-tool.sh'), 'helm'], 20 * MINUTE);
  if (tool.code !== 0) throw new Error(`ensure-tool.sh helm failed:\n${tool.out}`);
  return tool.out.trim().split('\n').pop()!;
}

/** The chart's label selector of one component of a release. */
export const componentSelector = (release: string, component: string) =>
  `app.kubernetes.io/instance=${release},app.kubernetes.io/component=${component}`;

/** What a user would look at when something hangs: pods, their last logs, warning events. */
export async function diagnostics(kc: KubeConfig, namespaces: string[]): Promise<string> {
  const core = kc.makeApiClient(CoreV1Api);
  const lines: string[] = [];
  for (const namespace of namespaces) {
    try {
      for (const pod of (await core.listNamespacedPod({ namespace })).items) {
        const name = pod.metadata!.name!;
        for (const c of pod.status?.containerStatuses ?? []) {
          const state = JSON.stringify(c.state?.waiting ?? c.state?.terminated ?? c.state?.running ?? {});
          const last = c.lastState?.terminated ? ` last: ${JSON.stringify(c.lastState.terminated)}` : '';
          lines.push(
            `pod ${namespace}/${name} ${pod.status?.phase} ready=${c.ready} restarts=${c.restartCount} ${state}${last}`,
          );
        }
        if (!pod.status?.containerStatuses?.length)
          lines.push(`pod ${namespace}/${name} ${pod.status?.phase}`);
        const log = await core
          .readNamespacedPodLog({ name, namespace, tailLines: 30 })
          .catch((e: unknown) => `(no log: ${(e as Error).message})`);
        lines.push(`--- log of ${namespace}/${name}\n${log}`);
      }
      const events = (await core.listNamespacedEvent({ namespace })).items.filter(
        (e) => e.type === 'Warning',
      );
      for (const e of events.slice(-30))
        lines.push(
          `event ${namespace} ${e.involvedObject.kind}/${e.involvedObject.name}: ${e.reason} ${e.message}`,
        );
    } catch (e) {
      lines.push(`(diagnostics of ${namespace} failed: ${(e as Error).message})`);
    }
  }
  return lines.join('\n');
}

/** Polls every `everyMs` until `probe` returns a value; on timeout fails with the last error and `explain()`. */
export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  ms: number,
  explain: () => Promise<string> = async () => '',
  everyMs = 2000,
): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const got = await probe();
      if (got !== undefined) return got;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline) break;
    await sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what} (last: ${JSON.stringify(last)})\n${await explain()}`);
}

/** The chart's Deployment of a component once all its replicas are Ready, else undefined. */
export async function readyDeployment(
  kc: KubeConfig,
  namespace: string,
  release: string,
  component: string,
): Promise<V1Deployment | undefined> {
  const apps = kc.makeApiClient(AppsV1Api);
  const [d] = (
    await apps.listNamespacedDeployment({ namespace, labelSelector: componentSelector(release, component) })
  ).items;
  const want = d?.spec?.replicas ?? 1;
  const s = d?.status;
  return d && s?.readyReplicas === want && s.updatedReplicas === want && s.availableReplicas === want
    ? d
    : undefined;
}

export interface RestAnswer {
  status: number;
  body: Any;
}

/** The REST API of a gateway at `baseUrl`, as a user's HTTP client calls it. */
export function restClient(baseUrl: () => string) {
  return async function api(
    method: string,
    path: string,
    opts: { token?: string; json?: unknown; form?: Record<string, string> } = {},
  ): Promise<RestAnswer> {
    const headers: Record<string, string> = {};
    let body: string | undefined;
    if (opts.token) headers.Authorization = `Bearer ${opts.token}`;
    if (opts.json !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(opts.json);
    } else if (opts.form) {
      headers['Content-Type'] = 'application/x-www-form-urlencoded';
      body = new URLSearchParams(opts.form).toString();
    }
    const res = await fetch(`${baseUrl()}${path}`, {
      method,
      headers,
      body,
      signal: AbortSignal.timeout(30_000),
    });
    const text = await res.text();
    let parsed: unknown = text;
    try {
      parsed = JSON.parse(text);
    } catch {
      // not JSON: keep the text
    }
    return { status: res.status, body: parsed };
  };
}
