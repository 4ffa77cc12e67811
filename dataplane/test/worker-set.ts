import { startWorker, stopWorker, waitReady, type RunningWorker } from '@sluice/testing/kafka-helpers';

/**
 * The worker programs one describe block starts, every one with `env`, kept
 * so that its `afterAll` stops them all (`stopAll`) before it drops what they
 * use.
 */
export interface WorkerSet {
  env: Record<string, string>;
  workers: RunningWorker[];
  /** A worker started with `config`, not waited for (one expected to refuse to start). */
  start(config: unknown): Promise<RunningWorker>;
  /** A worker started with `config`, ready. */
  startReady(config: unknown): Promise<RunningWorker>;
  stopAll(): Promise<void>;
}

export function workerSet(env: Record<string, string>): WorkerSet {
  const workers: RunningWorker[] = [];
  const start = async (config: unknown) => {
    const w = await startWorker(config, env);
    workers.push(w);
    return w;
  };
  return {
    env,
    workers,
    start,
    async startReady(config) {
      const w = await start(config);
      await waitReady(w);
      return w;
    },
    async stopAll() {
      for (const w of workers) await stopWorker(w);
    },
  };
}

/** How worker `w` ended (its exit code), or 'still running' if it has not within `ms`. */
export async function endWithin(w: RunningWorker, ms: number): Promise<number | null | 'still running'> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    w.exited,
    new Promise<'still running'>((r) => (timer = setTimeout(() => r('still running'), ms))),
  ]).finally(() => clearTimeout(timer));
}
