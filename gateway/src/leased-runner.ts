import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { GatewayContext } from './context.js';
import { Ticker } from './ticker.js';

/** What every leased runner is configured with. */
export interface LeaseOptions {
  /** How long a claim holds without a heartbeat. */
  leaseMs: number;
}

/**
 * The skeleton of a background job claimed through a lease in the service
 * database (backfill runs, deletions): one replica runs a job at a time, the
 * holder renews its lease while it works, and the resume tick of any replica
 * takes over the jobs nobody holds (never claimed, released, or their
 * gateway stopped). A subclass says how a job is claimed, found and run;
 * `run` handles its own errors (what is left of a failure is ignored here).
 */
export abstract class LeasedRunner<Claim, Options extends LeaseOptions> {
  /** This runner's name in the lease columns: host, process and a random part (two runners of one process differ). */
  readonly runner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  protected readonly abort = new AbortController();
  private readonly inFlight = new Map<string, Promise<void>>();
  private ticker: Ticker | undefined;

  constructor(
    protected readonly ctx: GatewayContext,
    readonly options: Options,
  ) {}

  /** Claims the job; what `run` gets, or nothing when another runner holds it or it is over. */
  protected abstract claim(id: string): Promise<Claim | null | undefined>;
  /** Up to `limit` unfinished jobs nobody holds. */
  protected abstract unclaimed(limit: number): Promise<string[]>;
  /** Extends this runner's lease on the job (the heartbeat). */
  protected abstract renewLease(id: string): Promise<unknown>;
  /** Works on the claimed job until it is done, fails or the runner stops. */
  protected abstract run(claimed: Claim, id: string): Promise<void>;

  /** Whether this replica works on these jobs (its periodic jobs run). */
  get started(): boolean {
    return this.ticker !== undefined && !this.abort.signal.aborted;
  }

  /** Claims the job and runs it in the background; false when another runner holds it or it is over. */
  async launch(id: string): Promise<boolean> {
    if (this.abort.signal.aborted || this.inFlight.has(id)) return false;
    const claimed = await this.claim(id);
    if (!claimed) return false;
    const p = this.run(claimed, id)
      .catch(() => undefined)
      .finally(() => this.inFlight.delete(id));
    this.inFlight.set(id, p);
    return true;
  }

  /** Takes over the unfinished jobs nobody holds. */
  async resume(): Promise<string[]> {
    const launched: string[] = [];
    for (const id of await this.unclaimed(10)) if (await this.launch(id)) launched.push(id);
    return launched;
  }

  /** Resolves when every job started here has ended (or stopped). */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight.values()]);
  }

  /** Stops the ticks, then waits for the jobs in flight, which see the abort signal and release what is unfinished. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.ticker?.stop();
    await this.idle();
  }

  /** Runs `tick` every `intervalMs` (never overlapping); `onError` hears a tick that failed. */
  protected tickEvery(
    intervalMs: number,
    tick: () => Promise<unknown>,
    onError: (err: unknown) => void,
  ): this {
    this.ticker = new Ticker(tick, onError).start(intervalMs);
    return this;
  }

  /** Renews the lease on `id` every third of its length (at least a second) until the returned function is called. */
  protected heartbeat(id: string): () => void {
    const timer = setInterval(
      () => void this.renewLease(id).catch(() => undefined),
      Math.max(1000, this.options.leaseMs / 3),
    ).unref();
    return () => clearInterval(timer);
  }
}

/**
 * One runner per service database handle (the app's and the server's
 * context share it): `of` makes it on first use, `stop` stops the one made,
 * if any (gateway shutdown).
 */
export function runnerPerDatabase<R extends { stop(): Promise<void> }>(
  make: (ctx: GatewayContext) => R,
): { of(ctx: GatewayContext): R; stop(ctx: GatewayContext): Promise<void> } {
  const runners = new WeakMap<object, R>();
  return {
    of(ctx) {
      let r = runners.get(ctx.db);
      if (!r) {
        r = make(ctx);
        runners.set(ctx.db, r);
      }
      return r;
    },
    async stop(ctx) {
      const r = runners.get(ctx.db);
      runners.delete(ctx.db);
      await r?.stop();
    },
  };
}
