import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { GatewayContext } from '../../context.js';
import { Ticker } from '../../ticker.js';
import { nextRunAfter } from './warehouse-tasks.schedule.js';
import { executeRun } from './warehouse-tasks.runner.js';
import { claimDue, failAbandonedRuns, type RunRow } from './warehouse-tasks.repository.js';

/**
 * The scheduler of warehouse tasks (docs/warehouses.md, "Scheduler"). Every
 * gateway replica may run one: each tick claims the due tasks in one
 * transaction (`FOR UPDATE SKIP LOCKED`, then the task moves to its next
 * slot and the run is recorded under the unique (task, slot) pair), so two
 * schedulers never run the same slot, and a restart loses nothing — the
 * schedule is in the database. Slots missed while no scheduler ran are
 * coalesced into one run. The clock is injectable: tests drive `tick()` at
 * the instants they choose.
 */
export interface SchedulerOptions {
  /** The current instant; default the wall clock. */
  now?: () => Date;
  /** Names this scheduler in the runs it claims. */
  runner?: string;
  /** Tasks claimed per tick at most. */
  batch?: number;
}

export class TaskScheduler {
  readonly runner: string;
  private readonly now: () => Date;
  private readonly batch: number;
  private readonly inFlight = new Set<Promise<unknown>>();
  private readonly ticker = new Ticker(
    () => this.tick(),
    (err) => this.ctx.log.warn({ err }, 'The task scheduler could not claim due tasks'),
  );

  constructor(
    private readonly ctx: GatewayContext,
    opts: SchedulerOptions = {},
  ) {
    this.now = opts.now ?? (() => new Date());
    this.runner = opts.runner ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.batch = opts.batch ?? 20;
  }

  /** Claims what is due now and starts running it; resolves with the claimed runs (see `idle`). */
  async tick(): Promise<RunRow[]> {
    const now = this.now();
    // A run still RUNNING well past every deadline lost its gateway.
    const grace = (this.ctx.config.warehouses.statementTimeoutS + 600) * 1000;
    await failAbandonedRuns(this.ctx.db, new Date(now.getTime() - grace), now);
    const claimed = await claimDue(this.ctx.db, now, this.batch, this.runner, (task) => {
      try {
        return nextRunAfter(task.schedule, task.timezone, now);
      } catch {
        return null; // not reachable through the API, which validates schedules
      }
    });
    for (const { task, run } of claimed) {
      const p = executeRun(this.ctx, task, run, this.now)
        .catch((err: unknown) => this.ctx.log.error({ err, taskId: task.id }, 'A warehouse task run failed'))
        .finally(() => this.inFlight.delete(p));
      this.inFlight.add(p);
    }
    return claimed.map((c) => c.run);
  }

  /** Resolves when every run started so far has ended. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  /** Ticks every `intervalMs` until stopped. */
  start(intervalMs: number): this {
    this.ticker.start(intervalMs);
    return this;
  }

  /**
   * Stops ticking and waits a little for runs in flight. A run that outlives
   * the wait is marked failed by a later tick of any scheduler.
   */
  async stop(graceMs = 5000): Promise<void> {
    await this.ticker.stop();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.idle(),
      new Promise((resolve) => {
        timer = setTimeout(resolve, graceMs);
      }),
    ]);
    clearTimeout(timer);
  }
}
