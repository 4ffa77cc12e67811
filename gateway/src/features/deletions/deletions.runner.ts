import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { positiveSetting } from '@sluice/operator';
import {
  abortableSleep,
  DELETION_OBJECT_KINDS,
  DELETION_STEPS,
  oneLine,
  type DeletionObjectKind,
  type DeletionProgress,
  type DeletionStep,
} from '@sluice/shared';
import type { GatewayContext } from '../../context.js';
import type { DeletionRow } from '../../db/schema.js';
import { Ticker } from '../../ticker.js';
import { deleteObject, stopConnector } from './deletions.cascade.js';
import * as repo from './deletions.repository.js';

/**
 * Removes what deleted teams owned, in the background (docs/api.md
 * "Deletions"). A deletion is claimed through its lease (one replica at a
 * time); its steps run in order (DELETION_STEPS), and after every object the
 * progress is recorded with the lease, so a pass cut short — a gateway
 * stopped, a step that failed — is taken again by the next tick of any
 * replica where it stood. Every step lists what is left from the mirror,
 * so repeating one is harmless.
 */
export interface DeletionRunnerOptions {
  /** How long a claim holds without a heartbeat. */
  leaseMs: number;
  /** How long the last step waits in one pass for the cluster to let the objects go. */
  finalizeWaitMs: number;
}

export function deletionRunnerOptions(env: NodeJS.ProcessEnv = process.env): DeletionRunnerOptions {
  return {
    leaseMs: positiveSetting(env, 'SLUICE_DELETION_LEASE_MS', 60_000),
    finalizeWaitMs: positiveSetting(env, 'SLUICE_DELETION_FINALIZE_WAIT_MS', 30_000),
  };
}

type Outcome = 'done' | 'lost' | 'waiting';

export class DeletionRunner {
  readonly runner = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly abort = new AbortController();
  private ticker: Ticker | undefined;

  constructor(
    private readonly ctx: GatewayContext,
    readonly options: DeletionRunnerOptions = deletionRunnerOptions(),
  ) {}

  /** Whether this replica works on deletions (its periodic jobs run): a new deletion starts here at once. */
  get started(): boolean {
    return this.ticker !== undefined && !this.abort.signal.aborted;
  }

  /** Claims the deletion and runs it in the background; false when another runner holds it or it is done. */
  async launch(id: string): Promise<boolean> {
    if (this.abort.signal.aborted || this.inFlight.has(id)) return false;
    const row = await repo.claimDeletion(this.ctx.db, id, this.runner, this.options.leaseMs);
    if (!row) return false;
    const p = this.execute(row)
      .catch(async (err: unknown) => {
        // The next tick (of any replica) retries; the reason is what a superuser reads.
        const reason = oneLine(err);
        this.ctx.log.warn({ deletion: id, reason }, 'A deletion pass stopped on an error; it is retried');
        const at = this.passes.get(id);
        await repo.recordStep(this.ctx.db, id, this.runner, this.options.leaseMs, {
          step: at?.step ?? row.step,
          progress: at?.progress ?? (row.progress as DeletionProgress),
          message: reason,
        });
        await repo.releaseDeletion(this.ctx.db, id, this.runner);
      })
      .catch(() => undefined)
      .finally(() => {
        this.inFlight.delete(id);
        this.passes.delete(id);
      });
    this.inFlight.set(id, p);
    return true;
  }

  /** Takes over the unfinished deletions nobody holds (new, released, or their gateway stopped). */
  async resume(): Promise<string[]> {
    const launched: string[] = [];
    for (const id of await repo.unclaimedDeletions(this.ctx.db, 10))
      if (await this.launch(id)) launched.push(id);
    return launched;
  }

  /** Resolves when every pass started here has ended. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight.values()]);
  }

  start(intervalMs: number): this {
    this.ticker = new Ticker(
      () => this.resume(),
      (err) => this.ctx.log.warn({ reason: oneLine(err) }, 'The deletion runner could not resume deletions'),
    ).start(intervalMs);
    return this;
  }

  /** Stops between two objects; unfinished deletions are released for the next replica or start. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.ticker?.stop();
    await this.idle();
  }

  /** Where each pass in flight stands, for the error path. */
  private readonly passes = new Map<string, { step: DeletionStep | null; progress: DeletionProgress }>();

  private async execute(row: DeletionRow): Promise<void> {
    const { db } = this.ctx;
    const signal = this.abort.signal;
    const { leaseMs } = this.options;
    const teams = row.team_ids;
    const progress: DeletionProgress = { ...repo.emptyProgress(), ...(row.progress as DeletionProgress) };
    const at = { step: row.step as DeletionStep | null, progress };
    this.passes.set(row.id, at);
    const heartbeat = setInterval(
      () => void repo.renewLease(db, row.id, this.runner, leaseMs).catch(() => undefined),
      Math.max(1000, leaseMs / 3),
    ).unref();
    const record = (step: DeletionStep | null, message: string | null = null) => {
      at.step = step;
      return repo.recordStep(db, row.id, this.runner, leaseMs, { step, progress, message });
    };
    try {
      this.ctx.log.info(
        { deletion: row.id, kind: row.kind, target: row.target_id },
        'Deleting what the teams own',
      );
      await repo.cancelBackfillsOf(db, teams);
      for (const step of DELETION_STEPS) {
        if (signal.aborted) return await this.release(row.id);
        if (!(await record(step))) return;
        const outcome = await this.runStep(step, teams, progress, signal, record);
        if (outcome === 'lost') return;
        if (outcome === 'waiting' || signal.aborted) return await this.release(row.id);
      }
      await repo.finishDeletion(db, row.id, this.runner, progress);
      this.ctx.log.info({ deletion: row.id, kind: row.kind, target: row.target_id }, 'Deletion done');
    } finally {
      clearInterval(heartbeat);
    }
  }

  private async release(id: string): Promise<void> {
    await repo.releaseDeletion(this.ctx.db, id, this.runner);
  }

  private async runStep(
    step: DeletionStep,
    teams: string[],
    progress: DeletionProgress,
    signal: AbortSignal,
    record: (step: DeletionStep | null, message?: string | null) => Promise<boolean>,
  ): Promise<Outcome> {
    const { db } = this.ctx;
    if (step === 'stop_workers') {
      for (const id of await repo.runningConnectorsOf(db, teams)) {
        if (signal.aborted) return 'waiting';
        await stopConnector(this.ctx, id);
      }
      return this.awaitStopped(teams, signal, record);
    }
    if (step === 'finalizing') return this.finalize(teams, signal, record);
    const kind: DeletionObjectKind = step;
    const ids = await repo.objectsOf(db, kind, teams, 'pending');
    progress[kind].total = progress[kind].deleted + ids.length;
    if (!(await record(step))) return 'lost';
    for (const id of ids) {
      if (signal.aborted) return 'waiting';
      await deleteObject(this.ctx, kind, id);
      progress[kind].deleted += 1;
      if (!(await record(step))) return 'lost';
    }
    return 'done';
  }

  /**
   * Waits (bounded, then again on a later tick) until the cluster has let
   * every object of the teams go: a connector goes once the operator's
   * finalizer has stopped its worker and its slot's release is recorded.
   */
  private async finalize(
    teams: string[],
    signal: AbortSignal,
    record: (step: DeletionStep | null, message?: string | null) => Promise<boolean>,
  ): Promise<Outcome> {
    const deadline = Date.now() + this.options.finalizeWaitMs;
    for (;;) {
      // An object that appeared meanwhile (a kubectl apply): the next pass runs the steps again.
      if (await this.anyPending(teams)) return 'waiting';
      const left = await this.remaining(teams);
      if (left.length === 0) return 'done';
      const message = `Waiting for the cluster to let go of ${left.join(', ')} (a connector goes once its worker has stopped)`;
      if (!(await record('finalizing', message))) return 'lost';
      if (Date.now() >= deadline || signal.aborted) return 'waiting';
      await abortableSleep(500, signal);
    }
  }

  /**
   * Waits (bounded, then again on a later tick) until no worker of the teams
   * runs: a data model or subscription deleted under a running worker would
   * restart it with a new configuration, and a PostgreSQL source's slot can
   * only be dropped once its worker has let go of it.
   */
  private async awaitStopped(
    teams: string[],
    signal: AbortSignal,
    record: (step: DeletionStep | null, message?: string | null) => Promise<boolean>,
  ): Promise<Outcome> {
    const deadline = Date.now() + this.options.finalizeWaitMs;
    for (;;) {
      const running = await repo.connectorsStillRunning(this.ctx.db, teams);
      if (running === 0) return 'done';
      const message = `Waiting for the workers of ${running} connector${running === 1 ? '' : 's'} to stop`;
      if (!(await record('stop_workers', message))) return 'lost';
      if (Date.now() >= deadline || signal.aborted) return 'waiting';
      await abortableSleep(250, signal);
    }
  }

  private async anyPending(teams: string[]): Promise<boolean> {
    for (const kind of DELETION_OBJECT_KINDS) {
      if ((await repo.objectsOf(this.ctx.db, kind, teams, 'pending')).length > 0) return true;
    }
    return false;
  }

  /** What the cluster still holds of the teams, as "2 connectors". */
  private async remaining(teams: string[]): Promise<string[]> {
    const out: string[] = [];
    for (const kind of DELETION_OBJECT_KINDS) {
      const ids = await repo.objectsOf(this.ctx.db, kind, teams, 'all');
      if (ids.length) out.push(`${ids.length} ${ids.length === 1 ? kind.slice(0, -1) : kind}`);
    }
    return out;
  }
}

/** One runner per service database handle (the app's and the server's context share it). */
const runners = new WeakMap<object, DeletionRunner>();

export function deletionRunner(ctx: GatewayContext): DeletionRunner {
  let r = runners.get(ctx.db);
  if (!r) {
    r = new DeletionRunner(ctx);
    runners.set(ctx.db, r);
  }
  return r;
}

/** Stops the runner of this context, if one was made (gateway shutdown). */
export async function stopDeletionRunner(ctx: GatewayContext): Promise<void> {
  const r = runners.get(ctx.db);
  runners.delete(ctx.db);
  await r?.stop();
}
