import { expect, it } from '@jest/globals';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { KubernetesCluster } from '@sluice/shared/cluster';
import { ProcessRuntime } from '../runtime/process-runtime.js';
import { Controller } from './controller.js';
import { LogEventRecorder } from './events.js';
import { silentLogger } from './logger.js';

/** A local port nothing listens on: connections to it are refused, as to an API server that is down. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A controller whose API server refuses every connection; `close` ends its runtime. */
async function controllerOfDownServer(): Promise<{ controller: Controller; close: () => Promise<void> }> {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'down', server: `https://127.0.0.1:${await closedPort()}`, skipTLSVerify: true }],
    users: [{ name: 'op' }],
    contexts: [{ name: 'down', cluster: 'down', user: 'op' }],
    currentContext: 'down',
  });
  const runtime = new ProcessRuntime({
    command: [process.execPath, '-e', ''],
    workDir: mkdtempSync(join(tmpdir(), 'sluice-run-')),
  });
  const controller = new Controller({
    cluster: new KubernetesCluster({ kubeConfig: kc, namespace: 'ns' }),
    clusterFor: (namespace) => new KubernetesCluster({ kubeConfig: kc, namespace }),
    runtime,
    events: new LogEventRecorder(silentLogger),
    log: silentLogger,
    namespaces: ['ns'],
    monitoringIntervalMs: 0,
  });
  return { controller, close: () => runtime.close() };
}

/** 'ended' if `run` ends within 5 s. */
async function ends(run: Promise<void>): Promise<string> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const waited = new Promise<string>(
    (resolve) => (timer = setTimeout(() => resolve('still running 5 s after the abort'), 5000)),
  );
  const outcome = await Promise.race([run.then(() => 'ended'), waited]);
  clearTimeout(timer);
  return outcome;
}

// A replica that loses the Lease before its caches listed (the API server
// down), or before its run began (main.ts first moves an earlier layout's
// objects), must have its run end, or the leader elector waits on it for
// ever and the replica never campaigns again.
it('a run aborted before any list answered ends', async () => {
  const { controller, close } = await controllerOfDownServer();
  const ac = new AbortController();
  const running = controller.run(ac.signal);
  await new Promise((r) => setTimeout(r, 300));
  ac.abort();
  expect(await ends(running)).toBe('ended');
  await close();
});

it('a run given a signal already aborted ends', async () => {
  const { controller, close } = await controllerOfDownServer();
  expect(await ends(controller.run(AbortSignal.abort()))).toBe('ended');
  await close();
});
