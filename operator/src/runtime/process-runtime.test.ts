import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { WorkerObservation } from '@sluice/shared';
import { ProcessRuntime } from './process-runtime.js';

const FIXTURE = resolve(import.meta.dirname, '../../test/fixtures/scripted-worker.mjs');
const runtimes: ProcessRuntime[] = [];

function runtime(): ProcessRuntime {
  const r = new ProcessRuntime({
    command: [process.execPath, FIXTURE],
    workDir: mkdtempSync(join(tmpdir(), 'sluice-workers-')),
    readinessIntervalMs: 50,
    stopTimeoutMs: 2000,
  });
  runtimes.push(r);
  return r;
}

const spec = (id: string, script: string, configHash = script) => ({
  id,
  namespace: 'default',
  configHash,
  config: { connector_id: id, configuration: { script } },
});

async function until(
  r: ProcessRuntime,
  id: string,
  test: (o: WorkerObservation | undefined) => boolean,
): Promise<WorkerObservation | undefined> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const o = await r.observe(id);
    if (test(o)) return o;
    if (Date.now() > deadline) throw new Error(`worker ${id} stayed ${JSON.stringify(o)}`);
    await new Promise((res) => setTimeout(res, 20));
  }
}

afterEach(async () => {
  await Promise.all(runtimes.splice(0).map((r) => r.close()));
});

describe('process runtime', () => {
  it('starts a worker, sees it ready through /readyz, and notifies each change', async () => {
    const r = runtime();
    const seen: string[] = [];
    r.subscribe((id) => seen.push(id));
    await r.ensure(spec('w1', 'slow:300'));
    expect((await r.observe('w1'))?.phase).toBe('starting');
    const ready = await until(r, 'w1', (o) => o?.phase === 'ready');
    expect(ready).toEqual({ id: 'w1', phase: 'ready', configHash: 'slow:300', restarts: 0 });
    expect(seen.filter((id) => id === 'w1').length).toBeGreaterThanOrEqual(2);
    const lines: string[] = [];
    for await (const line of r.logs('w1', { tail: 10 })) lines.push(line);
    expect(lines.join('\n')).toContain('started with slow:300');
  });

  it('reports a failed worker with the reason from its termination message', async () => {
    const r = runtime();
    await r.ensure(spec('w2', 'fail:cannot reach broker kafka:9092'));
    const failed = await until(r, 'w2', (o) => o?.phase === 'failed');
    expect(failed?.message).toBe('the worker exited with code 1: cannot reach broker kafka:9092');
  });

  it('keeps a worker with the same hash, and replaces it when the hash changes', async () => {
    const r = runtime();
    await r.ensure(spec('w3', 'ready', 'h1'));
    await until(r, 'w3', (o) => o?.phase === 'ready');
    await r.ensure(spec('w3', 'ready', 'h1'));
    expect((await r.observe('w3'))?.restarts).toBe(0);
    await r.ensure(spec('w3', 'slow:200', 'h2'));
    const replaced = await until(r, 'w3', (o) => o?.configHash === 'h2' && o.phase === 'ready');
    expect(replaced?.restarts).toBe(1);
    const lines: string[] = [];
    for await (const line of r.logs('w3', {})) lines.push(line);
    expect(lines.join('\n')).toContain('started with slow:200');
  });

  it('observes a worker that was ready and then died', async () => {
    const r = runtime();
    await r.ensure(spec('w4', 'ready-then-fail:300:lost the replication slot'));
    await until(r, 'w4', (o) => o?.phase === 'ready');
    const failed = await until(r, 'w4', (o) => o?.phase === 'failed');
    expect(failed?.message).toContain('lost the replication slot');
  });

  it('stops a worker: it is gone, and stopping again is harmless', async () => {
    const r = runtime();
    await r.ensure(spec('w5', 'ready'));
    await until(r, 'w5', (o) => o?.phase === 'ready');
    await r.stop('w5');
    expect(await r.observe('w5')).toBeUndefined();
    expect(await r.list()).toEqual([]);
    await expect(r.stop('w5')).resolves.toBeUndefined();
  });

  it('follows logs live until the signal aborts', async () => {
    const r = runtime();
    await r.ensure(spec('w6', 'ready'));
    await until(r, 'w6', (o) => o?.phase === 'ready');
    const ac = new AbortController();
    const lines: string[] = [];
    const reading = (async () => {
      for await (const line of r.logs('w6', { tail: 0, follow: true, signal: ac.signal })) lines.push(line);
    })();
    await r.stop('w6');
    ac.abort();
    await reading;
    expect(lines.join('\n')).toContain('stopping');
  });
});
