import { positiveSetting } from '@sluice/dataplane';
import {
  DELETION_OBJECT_KINDS,
  DELETION_STEPS,
  type DeletionObjectKind,
  type DeletionProgress,
  type DeletionStep,
} from '@sluice/shared/schemas';
import { abortableSleep, oneLine } from '@sluice/shared/util';
import type { GatewayContext } from '../../context.js';
import type { DeletionRow } from '../../db/schema.js';
import { LeasedRunner, runnerPerDatabase, type LeaseOptions } from '../../leased-runner.js';
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
export interface DeletionRunnerOptions extends LeaseOptions {
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

/** Where a pass stands: the step it is on and the objects deleted so far. */
interface PassPosition {
  step: DeletionStep | null;
  progress: DeletionProgress;
}

/** Records where the pass stands (with the lease); false once the runner lost the deletion. */
type RecordStep = (step: DeletionStep | null, message?: string | null) => Promise<boolean>;

export class DeletionRunner extends LeasedRunner<DeletionRow, DeletionRunnerOptions> {
  constructor(ctx: GatewayContext, options: DeletionRunnerOptions = deletionRunnerOptions()) {
    super(ctx, options);
  }

  protected claim(id: string): Promise<DeletionRow | null | undefined> {
    return repo.claimDeletion(this.ctx.db, id, this.runner, this.options.leaseMs);
  }

  protected unclaimed(limit: number): Promise<string[]> {
    return repo.unclaimedDeletions(this.ctx.db, limit);
  }

  protected renewLease(id: string): Promise<unknown> {
    return repo.renewLease(this.ctx.db, id, this.runner, this.options.leaseMs);
  }

  start(intervalMs: number): this {
    return this.tickEvery(
      intervalMs,
      () => this.resume(),
      (err) => this.ctx.log.warn({ reason: oneLine(err) }, 'The deletion runner could not resume deletions'),
    );
  }

  /** One pass; on an error, records it where the pass stood and releases the deletion. */
  protected async run(row: DeletionRow, id: string): Promise<void> {
    const at: PassPosition = {
      step: row.step as DeletionStep | null,
      progress: { ...repo.emptyProgress(), ...(row.progress as DeletionProgress) },
    };
    try {
      await this.execute(row, at);
    } catch (err) {
      // The next tick (of any replica) retries; the reason is what a superuser reads.
      const reason = oneLine(err);
      this.ctx.log.warn({ deletion: id, reason }, 'A deletion pass stopped on an error; it is retried');
      await repo.recordStep(this.ctx.db, id, this.runner, this.options.leaseMs, {
        step: at.step,
        progress: at.progress,
        message: reason,
      });
      await repo.releaseDeletion(this.ctx.db, id, this.runner);
    }
  }

  /** Stops between two objects; `at` follows where the pass stands, for the error path. */
  private async execute(row: DeletionRow, at: PassPosition): Promise<void> {
    const { db } = this.ctx;
    const signal = this.abort.signal;
    const { leaseMs } = this.options;
    const teams = row.team_ids;
    const { progress } = at;
    const stopHeartbeat = this.heartbeat(row.id);
    const record: RecordStep = (step, message = null) => {
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
      stopHeartbeat();
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
    record: RecordStep,
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
  private finalize(teams: string[], signal: AbortSignal, record: RecordStep): Promise<Outcome> {
    return this.waitFor('finalizing', 500, signal, record, async () => {
      // An object that appeared meanwhile (a kubectl apply): the next pass runs the steps again.
      if (await this.anyPending(teams)) return 'waiting';
      const left = await this.remaining(teams);
      if (left.length === 0) return 'done';
      return {
        message: `Waiting for the cluster to let go of ${left.join(', ')} (a connector goes once its worker has stopped)`,
      };
    });
  }

  /**
   * Waits (bounded, then again on a later tick) until no worker of the teams
   * runs: a data model or subscription deleted under a running worker would
   * restart it with a new configuration, and a PostgreSQL source's slot can
   * only be dropped once its worker has let go of it.
   */
  private awaitStopped(teams: string[], signal: AbortSignal, record: RecordStep): Promise<Outcome> {
    return this.waitFor('stop_workers', 250, signal, record, async () => {
      const running = await repo.connectorsStillRunning(this.ctx.db, teams);
      if (running === 0) return 'done';
      return {
        message: `Waiting for the workers of ${running} connector${running === 1 ? '' : 's'} to stop`,
      };
    });
  }

  /**
   * Asks `check` every `pollMs` until it gives an outcome, recording the
   * message it gives meanwhile on `step`; 'waiting' once `finalizeWaitMs`
   * has passed or the runner stops (a later pass waits again).
   */
  private async waitFor(
    step: DeletionStep,
    pollMs: number,
    signal: AbortSignal,
    record: RecordStep,
    check: () => Promise<Outcome | { message: string }>,
  ): Promise<Outcome> {
    const deadline = Date.now() + this.options.finalizeWaitMs;
    for (;;) {
      const seen = await check();
      if (typeof seen === 'string') return seen;
      if (!(await record(step, seen.message))) return 'lost';
      if (Date.now() >= deadline || signal.aborted) return 'waiting';
      await abortableSleep(pollMs, signal);
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

const runners = runnerPerDatabase((ctx) => new DeletionRunner(ctx));

/** The deletion runner of this context's service database (made on first use). */
export function deletionRunner(ctx: GatewayContext): DeletionRunner {
  return runners.of(ctx);
}

/** Stops the runner of this context, if one was made (gateway shutdown). */
export function stopDeletionRunner(ctx: GatewayContext): Promise<void> {
  return runners.stop(ctx);
}
