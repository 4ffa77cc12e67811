import { afterEach, describe, expect, it } from '@jest/globals';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { WorkerObservation } from '@sluice/shared/ports';
import { ProcessRuntime } from './process-runtime.js';

const FIXTURE = resolve(import.meta.dirname, '../../../testing/fixtures/scripted-worker.mjs');
const runtimes: ProcessRuntime[] = [];

/** Back-off of 200 ms doubling (kubelet's 10 s would make these tests slow). */
const BACKOFF = { baseMs: 200, maxMs: 6000, resetAfterMs: 12_000 };

function runtime(): ProcessRuntime {
  const r = new ProcessRuntime({
    command: [process.execPath, FIXTURE],
    workDir: mkdtempSync(join(tmpdir(), 'sluice-workers-')),
    readinessIntervalMs: 50,
    stopTimeoutMs: 2000,
    backoff: BACKOFF,
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

/** Every observation of `id` the runtime notifies (the phases of a crash are brief). */
function record(r: ProcessRuntime, id: string): (WorkerObservation & { at: number })[] {
  const seen: (WorkerObservation & { at: number })[] = [];
  r.subscribe((changed) => {
    if (changed !== id) return;
    const at = Date.now();
    void r.observe(id).then((o) => o && seen.push({ ...o, at }));
  });
  return seen;
}

/** The pid of the worker process `id` (its SLUICE_WORKER_ID), from /proc. */
function pidOf(id: string): number {
  for (const entry of readdirSync('/proc').filter((e) => /^\d+$/.test(e))) {
    try {
      if (readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(`SLUICE_WORKER_ID=${id}`)) {
        return Number(entry);
      }
    } catch {
      // gone meanwhile
    }
  }
  throw new Error(`no process for worker ${id}`);
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
    expect(ready).toEqual({
      id: 'w1',
      phase: 'ready',
      configHash: 'slow:300',
      restarts: 0,
      replicas: 1,
      readyReplicas: 1,
    });
    expect(seen.filter((id) => id === 'w1').length).toBeGreaterThanOrEqual(2);
    const lines: string[] = [];
    for await (const line of r.logs('w1', { tail: 10 })) lines.push(line);
    expect(lines.join('\n')).toContain('started with slow:300');
  });

  it('keeps a ready worker ready through two failed probes, and not ready after a third', async () => {
    const r = runtime();
    await r.ensure(spec('blip', 'unready:1000:2'));
    await until(r, 'blip', (o) => o?.phase === 'ready');
    const blip = record(r, 'blip');
    // Its two answers of 503 have come and gone (probes every 50 ms, 1 s after it listened).
    await new Promise((res) => setTimeout(res, 2500));
    expect(blip.map((o) => o.phase)).toEqual([]);
    expect((await r.observe('blip'))?.phase).toBe('ready');

    await r.ensure(spec('down', 'unready:1000:0'));
    await until(r, 'down', (o) => o?.phase === 'ready');
    const seen = await until(r, 'down', (o) => o?.phase === 'starting');
    expect(seen?.readyReplicas).toBe(0);
  });

  it('restarts a worker that fails at once with back-off, keeping its own error line', async () => {
    const r = runtime();
    const seen = record(r, 'w2');
    await r.ensure(spec('w2', 'fail:cannot reach broker kafka:9092'));
    await until(r, 'w2', (o) => o?.phase === 'failed');
    const failed = seen.find((o) => o.phase === 'failed');
    expect(failed).toMatchObject({
      restarts: 0,
      message: 'the worker exited with code 1: cannot reach broker kafka:9092; restarting it in 0 s',
      lastTermination: { reason: 'Error', exitCode: 1, message: 'cannot reach broker kafka:9092' },
    });
    expect(failed?.lastTermination?.signal).toBeUndefined();
    await until(r, 'w2', (o) => o?.restarts === 3);
    // At once, then after 200 ms, then after 400 ms (kubelet's sequence on a shorter base).
    const waits = [0, 1, 2].map((n) => {
      const down = seen.find((o) => o.phase === 'failed' && o.restarts === n)!;
      const up = seen.find((o) => o.phase === 'starting' && o.restarts === n + 1)!;
      return { said: down.message?.replace(/.*restarting it in /, ''), waited: up.at - down.at };
    });
    expect(waits.map((w) => w.said)).toEqual(['0 s', '0.2 s', '0.4 s']);
    expect(waits[0]!.waited).toBeLessThan(150);
    expect(waits[1]!.waited).toBeGreaterThanOrEqual(190);
    expect(waits[2]!.waited).toBeGreaterThanOrEqual(390);
  });

  it('restarts a worker killed with SIGKILL at once: no message of its own, its last log line is not one', async () => {
    const r = runtime();
    await r.ensure(spec('w7', 'ready'));
    await until(r, 'w7', (o) => o?.phase === 'ready');
    const pid = pidOf('w7');
    process.kill(pid, 'SIGKILL');
    const back = await until(r, 'w7', (o) => o?.phase === 'ready' && o.restarts === 1);
    expect(back?.lastTermination).toEqual({
      reason: 'Error',
      exitCode: 137,
      signal: 'SIGKILL',
      finishedAt: expect.any(String),
    });
    expect(pidOf('w7')).not.toBe(pid);
  });

  it('does not restart a worker stopped while it waits for its restart', async () => {
    const r = runtime();
    await r.ensure(spec('w8', 'fail:no'));
    await until(r, 'w8', (o) => (o?.restarts ?? 0) >= 1 && o?.phase === 'failed');
    await r.stop('w8');
    await new Promise((res) => setTimeout(res, 800));
    expect(await r.observe('w8')).toBeUndefined();
  });

  it('keeps a worker with the same hash, and replaces it when the hash changes', async () => {
    const r = runtime();
    await r.ensure(spec('w3', 'ready', 'h1'));
    await until(r, 'w3', (o) => o?.phase === 'ready');
    await r.ensure(spec('w3', 'ready', 'h1'));
    expect((await r.observe('w3'))?.restarts).toBe(0);
    await r.ensure(spec('w3', 'slow:200', 'h2'));
    const replaced = await until(r, 'w3', (o) => o?.configHash === 'h2' && o.phase === 'ready');
    // A new configuration is a new worker (a new pod): its restarts count from zero.
    expect(replaced?.restarts).toBe(0);
    const lines: string[] = [];
    for await (const line of r.logs('w3', {})) lines.push(line);
    expect(lines.join('\n')).toContain('started with slow:200');
  });

  it('observes a worker that was ready and then died, and sees it ready again after its restart', async () => {
    const r = runtime();
    await r.ensure(spec('w4', 'ready-then-fail:300:lost the replication slot'));
    await until(r, 'w4', (o) => o?.phase === 'ready');
    const seen = record(r, 'w4');
    const failed = await until(r, 'w4', (o) => o?.phase === 'failed');
    expect(failed?.message).toContain('lost the replication slot');
    await until(r, 'w4', () => seen.some((o) => o.phase === 'ready' && o.restarts === 1));
    const back = seen.find((o) => o.phase === 'ready' && o.restarts === 1);
    expect(back?.lastTermination?.message).toBe('lost the replication slot');
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
