import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import {
  workerNodeOptions,
  type WorkerObservation,
  type WorkerRuntimePort,
  type WorkerSpec,
} from '@sluice/shared';
import { LogRing } from './log-ring.js';
import { inheritedWorkerEnv } from './worker-environment.js';
import { WorkerListeners } from './worker-listeners.js';

// The worker runtime of one machine (the embedded default): each worker is a
// child process speaking the worker contract of the port (config file,
// /readyz, termination message). Readiness is polled; an exit is final for
// that configuration (the operator decides about retries, not the runtime).

export interface ProcessRuntimeOptions {
  /** argv of the worker program; the runtime appends nothing (config comes by env). */
  command: readonly string[];
  /** Where each worker's config file and termination message live. */
  workDir: string;
  /** Extra environment for every worker (e.g. SLUICE_STREAM_BROKERS). */
  env?: Record<string, string>;
  /**
   * The values of the secret references of a worker's configuration, as the
   * `SLUICE_SECRET_<hash>` variables a Deployment maps from Secrets
   * (shared/src/secrets/worker-env.ts): the worker reads secrets the same way
   * under both runtimes and never opens the secret store itself.
   */
  secretEnv?: (config: unknown) => Promise<Record<string, string>>;
  readinessIntervalMs?: number;
  /** How long a worker has to exit after SIGTERM before SIGKILL. */
  stopTimeoutMs?: number;
  /** Log lines kept per worker for `logs({ tail })`. */
  logLines?: number;
}

interface Running {
  spec: WorkerSpec;
  child: ChildProcess;
  port: number;
  phase: WorkerObservation['phase'];
  message?: string;
  restarts: number;
  exited: Promise<void>;
  logs: LogRing;
  poll?: NodeJS.Timeout;
}

export class ProcessRuntime implements WorkerRuntimePort {
  readonly adapter = 'process' as const;
  private readonly workers = new Map<string, Running>();
  private readonly listeners = new WorkerListeners();
  private readonly readinessIntervalMs: number;
  private readonly stopTimeoutMs: number;
  private readonly logLines: number;

  constructor(private readonly options: ProcessRuntimeOptions) {
    this.readinessIntervalMs = options.readinessIntervalMs ?? 250;
    this.stopTimeoutMs = options.stopTimeoutMs ?? 10_000;
    this.logLines = options.logLines ?? 1000;
    mkdirSync(options.workDir, { recursive: true, mode: 0o700 });
  }

  async ensure(spec: WorkerSpec): Promise<void> {
    const current = this.workers.get(spec.id);
    if (current && current.spec.configHash === spec.configHash && current.phase !== 'stopping') return;
    // Restarts count replacements of a worker, whatever the reason.
    const restarts = current ? current.restarts + 1 : 0;
    if (current) await this.stop(spec.id);
    await this.launch(spec, restarts);
  }

  async stop(id: string): Promise<void> {
    const w = this.workers.get(id);
    if (!w) return;
    if (w.child.exitCode === null && w.child.signalCode === null) {
      this.set(w, 'stopping');
      w.child.kill('SIGTERM');
      const timer = setTimeout(() => w.child.kill('SIGKILL'), this.stopTimeoutMs);
      await w.exited;
      clearTimeout(timer);
    }
    clearInterval(w.poll);
    if (this.workers.get(id) === w) this.workers.delete(id);
    rmSync(this.dir(id), { recursive: true, force: true });
    this.notify(id);
  }

  async observe(id: string): Promise<WorkerObservation | undefined> {
    const w = this.workers.get(id);
    return w && this.observation(w);
  }

  async list(): Promise<WorkerObservation[]> {
    return [...this.workers.values()].map((w) => this.observation(w));
  }

  async metricsUrl(id: string): Promise<string | undefined> {
    const w = this.workers.get(id);
    return w?.phase === 'ready' ? `http://127.0.0.1:${w.port}/metrics` : undefined;
  }

  subscribe(listener: (id: string) => void): () => void {
    return this.listeners.subscribe(listener);
  }

  async *logs(
    id: string,
    options: { tail?: number; follow?: boolean; signal?: AbortSignal },
  ): AsyncIterable<string> {
    const w = this.workers.get(id);
    if (!w) return;
    yield* w.logs.read(options);
  }

  async close(): Promise<void> {
    await Promise.all([...this.workers.keys()].map((id) => this.stop(id)));
  }

  /** `<namespace>_<name>`: one flat directory per worker (namespaces contain no `_`). */
  private dir(id: string): string {
    return join(this.options.workDir, id.replace('/', '_'));
  }

  private async launch(spec: WorkerSpec, restarts: number): Promise<void> {
    const dir = this.dir(spec.id);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const configPath = join(dir, 'config.json');
    const terminationPath = join(dir, 'termination-message');
    writeFileSync(configPath, JSON.stringify(spec.config), { mode: 0o600 });
    rmSync(terminationPath, { force: true });
    const port = await freePort();
    const secrets = (await this.options.secretEnv?.(spec.config)) ?? {};
    const [command, ...args] = this.options.command;
    const child = spawn(command as string, args, {
      env: {
        ...inheritedWorkerEnv(process.env),
        NODE_OPTIONS: workerNodeOptions(process.env),
        ...this.options.env,
        ...secrets,
        SLUICE_WORKER_ID: spec.id,
        SLUICE_WORKER_CONFIG: configPath,
        SLUICE_WORKER_PORT: String(port),
        SLUICE_TERMINATION_MESSAGE_PATH: terminationPath,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const logs = new LogRing(this.logLines);
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', (line) => logs.push(line));
    }
    const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
    const w: Running = { spec, child, port, phase: 'starting', restarts, exited, logs };
    this.workers.set(spec.id, w);
    child.once('error', (error) => this.fail(w, `the worker could not start: ${error.message}`));
    child.once('exit', (code, signal) => {
      clearInterval(w.poll);
      if (w.phase === 'stopping') return;
      const reason = readMessage(terminationPath) ?? lastLine(logs);
      const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
      this.fail(w, reason ? `the worker ${how}: ${reason}` : `the worker ${how}`);
    });
    w.poll = setInterval(() => void this.probe(w), this.readinessIntervalMs);
    this.notify(spec.id);
  }

  /** Polls /readyz; ready and back (a worker that loses its broker) are both observed. */
  private async probe(w: Running): Promise<void> {
    if (w.phase !== 'starting' && w.phase !== 'ready') return;
    let ready: boolean;
    try {
      const res = await fetch(`http://127.0.0.1:${w.port}/readyz`, {
        signal: AbortSignal.timeout(this.readinessIntervalMs * 4),
      });
      ready = res.ok;
      await res.body?.cancel();
    } catch {
      ready = false;
    }
    if (w.phase !== 'starting' && w.phase !== 'ready') return;
    this.set(w, ready ? 'ready' : 'starting');
  }

  private fail(w: Running, message: string): void {
    w.message = message;
    this.set(w, 'failed');
  }

  private set(w: Running, phase: WorkerObservation['phase']): void {
    if (w.phase === phase) return;
    w.phase = phase;
    this.notify(w.spec.id);
  }

  private notify(id: string): void {
    this.listeners.notify(id);
  }

  private observation(w: Running): WorkerObservation {
    return {
      id: w.spec.id,
      phase: w.phase,
      configHash: w.spec.configHash,
      restarts: w.restarts,
      ...(w.message !== undefined ? { message: w.message } : {}),
    };
  }
}

function readMessage(path: string): string | undefined {
  try {
    const text = readFileSync(path, 'utf8').trim();
    return text ? text.slice(0, 4096) : undefined;
  } catch {
    return undefined;
  }
}

function lastLine(logs: LogRing): string | undefined {
  return logs.tail(1)[0]?.slice(0, 4096);
}

/** A free 127.0.0.1 port for the worker's HTTP endpoints. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
