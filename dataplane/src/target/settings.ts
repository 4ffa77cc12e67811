import { positiveSetting } from '../settings.js';

export interface TargetLoopOptions {
  /** Messages per Sink batch at most. */
  batchSize: number;
  /** How long a partial batch waits for more messages. */
  lingerMs: number;
  /** Messages buffered per consumer before consumption pauses (back-pressure). */
  maxBuffered: number;
  /** Sink attempts per batch before the worker fails (the batch is then redelivered to the next worker). */
  writeAttempts: number;
  /** Bytes of one fetch response at most (1 MiB of them per partition at most). */
  fetchMaxBytes: number;
}

/** Defaults, overridable by the environment (bench/ and tests tune them; docs/data-plane.md). */
export function loopOptions(env: NodeJS.ProcessEnv = process.env): TargetLoopOptions {
  const num = (name: string, fallback: number) => positiveSetting(env, name, fallback);
  return {
    batchSize: num('SLUICE_BATCH_SIZE', 500),
    lingerMs: num('SLUICE_BATCH_LINGER_MS', 50),
    maxBuffered: num('SLUICE_MAX_BUFFERED_MESSAGES', 5000),
    writeAttempts: num('SLUICE_WRITE_ATTEMPTS', 5),
    fetchMaxBytes: num('SLUICE_FETCH_MAX_BYTES', 4 * 1024 * 1024),
  };
}
