import { workerId, type WorkerReaderPort } from '@sluice/shared/ports';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import { loadConnector } from '../connectors/connectors.service.js';
import { loadPipeline } from '../pipelines/pipelines.service.js';

/** Lines a log read sends first when the client does not say (`tail`), and the most it may ask. */
export const DEFAULT_TAIL = 200;
export const MAX_TAIL = 5000;

/** A worker whose log a stream follows: the connector and, in a pipeline's stream, its side. */
export interface LogSide {
  connectorId: string;
  side?: 'source' | 'target';
}

/** The connector's worker, if the caller may read the connector (404 missing, 403 not in its team). */
export async function connectorSides(ctx: GatewayContext, p: Principal, id: string): Promise<LogSide[]> {
  await loadConnector(ctx, p, id);
  return [{ connectorId: id }];
}

/** Both workers of the pipeline, tagged with their side (404 missing, 403 not in its team). */
export async function pipelineSides(ctx: GatewayContext, p: Principal, id: string): Promise<LogSide[]> {
  const row = await loadPipeline(ctx, p, id);
  return [
    { connectorId: row.source_connector_id, side: 'source' },
    { connectorId: row.target_connector_id, side: 'target' },
  ];
}

/**
 * The connector's worker id, `<namespace>/<connector id>` (a connector's id
 * is its resource name): the namespace the mirror holds the connector in,
 * which is not the release namespace for one applied in an extra watched
 * namespace (its worker still runs in the worker namespace).
 */
export async function workerOf(ctx: GatewayContext, connectorId: string): Promise<string> {
  return workerId(await ctx.catalog.namespaceOf('Connector', connectorId), connectorId);
}

/** The last `tail` lines of the connector's worker; none when no worker runs (or no runtime is reachable). */
export async function tailOf(ctx: GatewayContext, p: Principal, id: string, tail: number): Promise<string[]> {
  await loadConnector(ctx, p, id);
  const runtime = ctx.workers;
  if (!runtime) return [];
  const lines: string[] = [];
  for await (const line of runtime.logs(await workerOf(ctx, id), { tail, follow: false })) lines.push(line);
  return lines.slice(-tail);
}

/** Which run of a worker this is: a new one has a fresh log (process runtime: a new ring). */
async function instanceOf(runtime: WorkerReaderPort, id: string): Promise<string | undefined> {
  const o = await runtime.observe(id);
  return o ? `${o.configHash}#${o.restarts}#${o.instance ?? ''}` : undefined;
}

/** Resolves on the next change of the worker's observation, or after `ms`, or when `signal` aborts. */
function nextChange(runtime: WorkerReaderPort, id: string, signal: AbortSignal, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      unsubscribe();
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    const unsubscribe = runtime.subscribe((changed) => {
      if (changed === id) done();
    });
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * The worker's log, the last `tail` lines then live, across restarts, until
 * `signal` aborts. A worker run ends its log (Kubernetes: the container's log
 * stream ends) or is replaced by a new run (process runtime: a new run has a
 * log of its own): either way the stream goes on with the next run, from its
 * first line kept — on Kubernetes, a pod rescheduled with the same
 * configuration is a next run too (its uid: `WorkerObservation.instance`). A
 * run whose log ended before its first line (a container not started yet) is
 * read again. While no worker runs it waits for one.
 */
export async function* followWorker(
  runtime: WorkerReaderPort,
  id: string,
  tail: number,
  signal: AbortSignal,
  recheckMs = 2000,
): AsyncGenerator<string> {
  let seen: string | undefined;
  let first = true;
  // A worker of several instances is read anew when one of them changes, and
  // the instances that stayed give their kept lines again: those already sent
  // are not sent twice (worker lines carry their time and instance).
  const sent = new RecentLines(4 * MAX_TAIL);
  while (!signal.aborted) {
    const instance = await instanceOf(runtime, id);
    if (instance === undefined || instance === seen) {
      // No worker, or the run whose log already ended: wait for the next one.
      await nextChange(runtime, id, signal, recheckMs);
      continue;
    }
    const run = new AbortController();
    const stop = () => run.abort();
    signal.addEventListener('abort', stop, { once: true });
    // A new run of the worker ends the follow of the previous one.
    const unsubscribe = runtime.subscribe((changed) => {
      if (changed !== id) return;
      void instanceOf(runtime, id).then((now) => {
        if (now !== instance) run.abort();
      });
    });
    let received = 0;
    try {
      // The first run: the asked tail; a later one: all it kept (it is new since the last line sent).
      const lines = runtime.logs(id, { tail: first ? tail : MAX_TAIL, follow: true, signal: run.signal });
      for await (const line of lines) {
        if (run.signal.aborted) break;
        received++;
        if (sent.seenBefore(line)) continue;
        yield line;
      }
    } finally {
      unsubscribe();
      signal.removeEventListener('abort', stop);
    }
    if (received === 0 && !run.signal.aborted) {
      // Nothing came and the log ended: a container not started yet (the
      // kubelet refuses its log) looks the same. Read this run again at its
      // next change, or after `recheckMs`.
      await nextChange(runtime, id, signal, recheckMs);
      continue;
    }
    seen = instance;
    first = false;
  }
}

/**
 * The last `capacity` distinct time-stamped lines sent, for skipping one sent
 * already. Only a line with its time (and instance) tells a repeat from a new
 * line that reads the same, so lines without one always pass.
 */
class RecentLines {
  private readonly lines = new Set<string>();

  constructor(private readonly capacity: number) {}

  /** Whether `line` was sent before; records it when not. */
  seenBefore(line: string): boolean {
    if (!line.includes('"time":"')) return false;
    if (this.lines.has(line)) return true;
    this.lines.add(line);
    if (this.lines.size > this.capacity) this.lines.delete(this.lines.values().next().value as string);
    return false;
  }
}
