import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startTestGateway, type DbKind, type TestGateway } from './harness.js';

// The gateway with its embedded operator and, as workers, the scripted
// stand-in of testing/fixtures/scripted-worker.mjs (it speaks the real
// worker contract). Each connector's behaviour (`ready`, `fail:<reason>`,
// `slow:<ms>`, …) is set by id through the SLUICE_TEST_WORKER_SCRIPTS file.

const FIXTURE = resolve(import.meta.dirname, '../../testing/fixtures/scripted-worker.mjs');

export interface ScriptedGateway {
  gw: TestGateway;
  /** Sets what the worker of `connectorId` does on its next start. */
  script(connectorId: string, behaviour: string): void;
}

export async function startScriptedGateway(kind: DbKind = 'pglite'): Promise<ScriptedGateway> {
  const file = join(mkdtempSync(join(tmpdir(), 'sluice-scripts-')), 'scripts.json');
  const scripts: Record<string, string> = {};
  const script = (connectorId: string, behaviour: string) => {
    scripts[connectorId] = behaviour;
    writeFileSync(file, JSON.stringify(scripts));
  };
  process.env.SLUICE_TEST_WORKER_SCRIPTS = file;
  // Restarts after 0, 100, 200 ms… instead of kubelet's 0, 10, 20 s: a worker
  // scripted to fail reaches `error` (three restarts) within a second or two.
  process.env.SLUICE_WORKER_BACKOFF_BASE_MS ??= '100';
  script('none', 'ready');
  const gw = await startTestGateway(kind, {
    SLUICE_EMBEDDED_OPERATOR: 'true',
    SLUICE_WORKER_COMMAND: JSON.stringify([process.execPath, FIXTURE]),
  });
  return { gw, script };
}

/** GETs `path` until its body passes `test`; fails with the last body after `ms`. */
export async function untilBody(
  gw: TestGateway,
  auth: Record<string, string>,
  path: string,
  test: (body: Record<string, unknown>) => boolean,
  ms = 20_000,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + ms;
  let body: Record<string, unknown> = {};
  while (Date.now() < deadline) {
    body = (await gw.http.get(path).set(auth)).body as Record<string, unknown>;
    if (test(body)) return body;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${path} stayed ${JSON.stringify(body)}`);
}
