import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { constants as osConstants } from 'node:os';
import { type WorkerTermination } from '@sluice/shared/catalog';
import { freePort } from '@sluice/shared/net';
import {
  describeTermination,
  workerNodeOptions,
  type WorkerObservation,
  type WorkerRuntimePort,
  type WorkerSpec,
} from '@sluice/shared/ports';
import { backoffTiming, CrashBackoff, type BackoffTiming } from './backoff.js';
import { LogRing } from './log-ring.js';
import { inheritedWorkerEnv } from './worker-environment.js';
import { WorkerListeners } from './worker-listeners.js';
import { instancesLog } from './instance-logs.js';

// The worker runtime of one machine (the embedded default): each worker is a
// child process speaking the worker contract of the port (config file,
// /readyz, termination message). Readiness is polled. It supervises as a
// kubelet does a pod with restartPolicy Always: a worker that ends without
// being asked to (a crash, kill -9, exit 0) is restarted with kubelet's
// back-off (backoff.ts), its restarts counted and how its last run ended
// kept; whether that makes the connector `error` is the operator's call
// (reconcile/connector/worker-status.ts), on the same facts as under Kubernetes.
// A worker of N replicas (a target scaled out) is N children, each its own
// port and termination message, as a Deployment of N pods; they share the
// configuration and join one consumer group. A new count starts or stops
// children and leaves the others running; a new configuration replaces all.

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
  /** Restart back-off; default kubelet's, or SLUICE_WORKER_BACKOFF_BASE_MS (`backoffTiming`). */
  backoff?: BackoffTiming;
}

/** One run of a worker: a child process and what it printed. */
/** Failed readiness probes in a row after which a ready instance is not ready (a kubelet's default). */
const FAILURES_TO_UNREADY = 3;
/** A readiness probe's answer is awaited at least this long (a kubelet's default timeoutSeconds is 1). */
const PROBE_TIMEOUT_MS = 1000;

interface Run {
  child: ChildProcess;
  port: number;
  logs: LogRing;
  exited: Promise<void>;
  poll?: NodeJS.Timeout;
  /** A readiness probe is in flight: the next poll waits for it (answers arrive in order). */
  probing?: boolean;
  /** Failed probes in a row since the last answer of 200. */
  failures?: number;
  readyAt?: number;
  ended: boolean;
}

/** One instance of a worker (a pod of its Deployment): its runs, one after another. */
interface Running {
  spec: WorkerSpec;
  /** Its place among the worker's instances, 0 … replicas - 1. */
  index: number;
  run: Run;
  phase: WorkerObservation['phase'];
  message?: string;
  restarts: number;
  lastTermination?: WorkerTermination;
  backoff: CrashBackoff;
  /** The pending restart of a worker that ended. */
  restart?: NodeJS.Timeout;
}

export class ProcessRuntime implements WorkerRuntimePort {
  readonly adapter = 'process' as const;
  /** The instances of each worker, by worker id, in index order. */
  private readonly workers = new Map<string, Running[]>();
  private readonly listeners = new WorkerListeners();
  private readonly readinessIntervalMs: number;
  private readonly stopTimeoutMs: number;
  private readonly logLines: number;
  private readonly backoff: BackoffTiming;

  constructor(private readonly options: ProcessRuntimeOptions) {
    this.readinessIntervalMs = options.readinessIntervalMs ?? 250;
    this.stopTimeoutMs = options.stopTimeoutMs ?? 10_000;
    this.logLines = options.logLines ?? 1000;
    this.backoff = options.backoff ?? backoffTiming();
    mkdirSync(options.workDir, { recursive: true, mode: 0o700 });
  }

  async ensure(spec: WorkerSpec): Promise<void> {
    const replicas = spec.replicas ?? 1;
    let instances = this.workers.get(spec.id) ?? [];
    // The same configuration (running, or waiting for its restart) keeps its instances.
    const same = instances.every((w) => w.spec.configHash === spec.configHash && w.phase !== 'stopping');
    if (same && instances.length === replicas) {
      for (const w of instances) w.spec = spec;
      return;
    }
    if (!same) {
      await this.stop(spec.id);
      instances = [];
    }
    // A scale: the instances past the count stop, the missing ones start; the others run on.
    const kept = instances.slice(0, replicas);
    for (const w of kept) w.spec = spec;
    this.workers.set(spec.id, kept);
    await Promise.all(instances.slice(replicas).map((w) => this.stopInstance(w)));
    for (let index = kept.length; index < replicas; index++) {
      // A new instance is a new pod: restarts and back-off from zero.
      const w: Running = {
        spec,
        index,
        phase: 'starting',
        restarts: 0,
        backoff: new CrashBackoff(this.backoff),
        run: await this.launch(spec, index),
      };
      kept.push(w);
      this.watch(w, w.run);
    }
    this.notify(spec.id);
  }

  async stop(id: string): Promise<void> {
    const instances = this.workers.get(id);
    if (!instances) return;
    await Promise.all(instances.map((w) => this.stopInstance(w)));
    if (this.workers.get(id) === instances) this.workers.delete(id);
    rmSync(this.dir(id), { recursive: true, force: true });
    this.notify(id);
  }

  /** Stops one instance (SIGTERM, then SIGKILL after the timeout) and waits for it to exit. */
  private async stopInstance(w: Running): Promise<void> {
    clearTimeout(w.restart);
    const { child, exited } = w.run;
    if (child.exitCode === null && child.signalCode === null && !w.run.ended) {
      this.set(w, 'stopping');
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), this.stopTimeoutMs);
      await exited;
      clearTimeout(timer);
    } else {
      w.phase = 'stopping';
    }
    clearInterval(w.run.poll);
  }

  async observe(id: string): Promise<WorkerObservation | undefined> {
    const instances = this.workers.get(id);
    return instances?.length ? this.observation(instances) : undefined;
  }

  async list(): Promise<WorkerObservation[]> {
    return [...this.workers.values()].filter((i) => i.length > 0).map((i) => this.observation(i));
  }

  /** A ready instance's (the first's when several are). */
  async metricsUrl(id: string): Promise<string | undefined> {
    return (await this.metricsUrls(id))[0];
  }

  /** Every ready instance's. */
  async metricsUrls(id: string): Promise<string[]> {
    return (this.workers.get(id) ?? [])
      .filter((i) => i.phase === 'ready')
      .map((i) => `http://127.0.0.1:${i.run.port}/metrics`);
  }

  subscribe(listener: (id: string) => void): () => void {
    return this.listeners.subscribe(listener);
  }

  async *logs(
    id: string,
    options: { tail?: number; follow?: boolean; signal?: AbortSignal },
  ): AsyncIterable<string> {
    // Every instance's, merged (instance-logs.ts), as the Deployment runtime does.
    const instances = this.workers.get(id) ?? [];
    yield* instancesLog(
      (i, o) => instances[i]!.run.logs.read({ ...o, signal: options.signal }),
      instances.length,
      options,
    );
  }

  async close(): Promise<void> {
    await Promise.all([...this.workers.keys()].map((id) => this.stop(id)));
  }

  /** `<namespace>_<name>`: one flat directory per worker (namespaces contain no `_`). */
  private dir(id: string): string {
    return join(this.options.workDir, id.replace('/', '_'));
  }

  private terminationPath(id: string, index: number): string {
    return join(this.dir(id), index === 0 ? 'termination-message' : `termination-message-${index}`);
  }

  /** Whether `w` is still one of its worker's instances (not stopped or replaced). */
  private current(w: Running): boolean {
    return this.workers.get(w.spec.id)?.[w.index] === w;
  }

  /** Starts one run of an instance: config file, a fresh termination message, a port, the child. */
  private async launch(spec: WorkerSpec, index: number): Promise<Run> {
    const dir = this.dir(spec.id);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const configPath = join(dir, 'config.json');
    const terminationPath = this.terminationPath(spec.id, index);
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
        // Its lines say which instance wrote them (a pod's name on Kubernetes).
        SLUICE_WORKER_INSTANCE: String(index),
        SLUICE_WORKER_CONFIG: configPath,
        SLUICE_WORKER_PORT: String(port),
        SLUICE_TERMINATION_MESSAGE_PATH: terminationPath,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // A new run has a log of its own (as a restarted container has).
    const logs = new LogRing(this.logLines);
    for (const stream of [child.stdout, child.stderr]) {
      if (stream) createInterface({ input: stream }).on('line', (line) => logs.push(line));
    }
    const exited = new Promise<void>((resolve) => {
      child.once('close', () => resolve());
      child.once('error', () => resolve());
    });
    return { child, port, logs, exited, ended: false };
  }

  /** Readiness polls and the end of a run (an exit, or a child that could not be spawned). */
  private watch(w: Running, run: Run): void {
    run.child.once('error', (error) =>
      this.ended(w, run, { reason: 'StartError', exitCode: 128, message: error.message.slice(0, 4096) }),
    );
    run.child.once('exit', (code, signal) => this.ended(w, run, exitTermination(code, signal)));
    run.poll = setInterval(() => void this.probe(w, run), this.readinessIntervalMs);
  }

  /** A run ended without a stop: record how, and restart it after the back-off. */
  private ended(w: Running, run: Run, how: Omit<WorkerTermination, 'finishedAt'>): void {
    if (run.ended) return;
    run.ended = true;
    clearInterval(run.poll);
    if (w.phase === 'stopping' || !this.current(w) || w.run !== run) return;
    const finishedAt = Date.now();
    // The worker's own line only: a kill -9 leaves none, and its last log line is not a cause.
    const message = how.message ?? readMessage(this.terminationPath(w.spec.id, w.index));
    w.lastTermination = {
      ...how,
      ...(message !== undefined ? { message } : {}),
      finishedAt: new Date(finishedAt).toISOString(),
    };
    const delay = w.backoff.next(run.readyAt !== undefined ? finishedAt - run.readyAt : 0);
    w.message = `${describeTermination(w.lastTermination)}; restarting it in ${seconds(delay)}`;
    w.phase = 'failed';
    this.notify(w.spec.id);
    w.restart = setTimeout(() => void this.restart(w), delay);
  }

  private async restart(w: Running): Promise<void> {
    w.restart = undefined;
    if (w.phase !== 'failed' || !this.current(w)) return;
    let run: Run;
    try {
      run = await this.launch(w.spec, w.index);
    } catch (error) {
      // No port or no secret store answer: a run that could not start.
      w.run = { ...w.run, readyAt: undefined, ended: false };
      w.restarts++;
      this.ended(w, w.run, { reason: 'StartError', exitCode: 128, message: (error as Error).message });
      return;
    }
    // Stopped or replaced while launching: this run is not wanted.
    if (w.phase !== 'failed' || !this.current(w)) {
      run.child.kill('SIGKILL');
      return;
    }
    w.run = run;
    w.restarts++;
    w.message = undefined;
    this.watch(w, run);
    this.set(w, 'starting');
  }

  /**
   * Polls /readyz; ready and back (a worker that loses its broker) are both
   * observed. As a kubelet's readiness probe (failureThreshold 3): a ready
   * instance turns not ready after FAILURES_TO_UNREADY failed probes in a
   * row, not at one slow answer of a busy machine, and one probe is in flight
   * at a time, so an old probe's time-out never overrides a newer answer.
   */
  private async probe(w: Running, run: Run): Promise<void> {
    if (w.run !== run || run.probing || (w.phase !== 'starting' && w.phase !== 'ready')) return;
    run.probing = true;
    let ready: boolean;
    try {
      const res = await fetch(`http://127.0.0.1:${run.port}/readyz`, {
        signal: AbortSignal.timeout(Math.max(PROBE_TIMEOUT_MS, this.readinessIntervalMs * 4)),
      });
      ready = res.ok;
      await res.body?.cancel();
    } catch {
      ready = false;
    } finally {
      run.probing = false;
    }
    if (w.run !== run || run.ended || (w.phase !== 'starting' && w.phase !== 'ready')) return;
    run.failures = ready ? 0 : (run.failures ?? 0) + 1;
    if (ready) run.readyAt ??= Date.now();
    if (!ready && w.phase === 'ready' && run.failures < FAILURES_TO_UNREADY) return;
    this.set(w, ready ? 'ready' : 'starting');
  }

  private set(w: Running, phase: WorkerObservation['phase']): void {
    if (w.phase === phase) return;
    w.phase = phase;
    this.notify(w.spec.id);
  }

  private notify(id: string): void {
    this.listeners.notify(id);
  }

  /**
   * The instances of a worker as one observation, as a Deployment's pods are
   * (worker-observation.ts): ready while any instance is; failed when none
   * is and one ended or cannot start; restarts added up, the latest end.
   */
  private observation(instances: readonly Running[]): WorkerObservation {
    const first = instances[0] as Running;
    const ready = instances.filter((w) => w.phase === 'ready').length;
    const failed = instances.find((w) => w.phase === 'failed');
    const phase: WorkerObservation['phase'] = instances.some((w) => w.phase === 'stopping')
      ? 'stopping'
      : ready > 0
        ? 'ready'
        : failed
          ? 'failed'
          : 'starting';
    const lastTermination = instances
      .map((w) => w.lastTermination)
      .filter((t): t is WorkerTermination => t !== undefined)
      .sort((a, b) => b.finishedAt.localeCompare(a.finishedAt))[0];
    return {
      id: first.spec.id,
      phase,
      configHash: first.spec.configHash,
      restarts: instances.reduce((sum, w) => sum + w.restarts, 0),
      replicas: first.spec.replicas ?? 1,
      readyReplicas: ready,
      // A scale changes whose logs the worker's log is (followWorker reads them anew).
      ...(instances.length > 1 ? { instance: `${instances.length} instances` } : {}),
      ...(phase === 'failed' && failed?.message !== undefined ? { message: failed.message } : {}),
      ...(lastTermination ? { lastTermination } : {}),
    };
  }
}

function seconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

/** An exit as Kubernetes reports a container's: a signal is exit code 128 + its number. */
export function exitTermination(
  code: number | null,
  signal: NodeJS.Signals | null,
): Omit<WorkerTermination, 'finishedAt'> {
  if (signal) {
    const n = osConstants.signals[signal];
    return { reason: 'Error', signal, ...(n !== undefined ? { exitCode: 128 + n } : {}) };
  }
  return { reason: code === 0 ? 'Completed' : 'Error', exitCode: code ?? 0 };
}

function readMessage(path: string): string | undefined {
  try {
    const text = readFileSync(path, 'utf8').trim();
    return text ? text.slice(0, 4096) : undefined;
  } catch {
    return undefined;
  }
}
