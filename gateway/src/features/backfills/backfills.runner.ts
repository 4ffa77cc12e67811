import {
  fetchRange,
  positiveSetting,
  prepareSubscription,
  remainingIn,
  retainedRange,
  snapshotMessages,
  targetMetrics,
  writeBatch,
  type ConsumedMessage,
  type StreamRange,
  type WorkerContext,
} from '@sluice/dataplane';
import { MetricsRegistry } from '@sluice/shared/metrics';
import { oneLine } from '@sluice/shared/util';
import type { GatewayContext } from '../../context.js';
import { LeasedRunner, runnerPerDatabase, type LeaseOptions } from '../../leased-runner.js';
import type { BackfillItemRow, BackfillRunRow } from '../../db/schema.js';
import { resumeBinlogSources } from './backfills.binlog.js';
import {
  describeStreamFailure,
  openSourceTables,
  openStreamClient,
  openTarget,
} from './backfills.connections.js';
import * as repo from './backfills.repository.js';

/**
 * Runs backfills in the gateway (docs/data-plane.md "Backfills"). A run is
 * claimed through its lease (one replica at a time), its items are replayed
 * one after the other in bounded batches through the target loop's own
 * write path (`writeBatch`: mapper, error table, Sink, retries), and after
 * every batch the item's progress is recorded and the cancel flag read. A
 * run whose gateway stopped keeps its progress; once its lease lapsed, the
 * resume tick of any replica takes it over where it stood.
 */
export interface BackfillRunnerOptions extends LeaseOptions {
  /** Rows per re-snapshot page, and the target loop's batch size. */
  batchSize: number;
  /** Bytes fetched per stream batch at most. */
  fetchBytes: number;
  /** Sink attempts per batch before the run fails. */
  writeAttempts: number;
}

export function runnerOptions(env: NodeJS.ProcessEnv = process.env): BackfillRunnerOptions {
  return {
    batchSize: positiveSetting(env, 'SLUICE_BACKFILL_BATCH_SIZE', 500),
    fetchBytes: positiveSetting(env, 'SLUICE_BACKFILL_FETCH_BYTES', 1024 * 1024),
    leaseMs: positiveSetting(env, 'SLUICE_BACKFILL_LEASE_MS', 60_000),
    writeAttempts: positiveSetting(env, 'SLUICE_WRITE_ATTEMPTS', 5),
  };
}

type Outcome = 'done' | 'cancelled' | 'lost';

export class BackfillRunner extends LeasedRunner<string, BackfillRunnerOptions> {
  constructor(ctx: GatewayContext, options: BackfillRunnerOptions = runnerOptions()) {
    super(ctx, options);
  }

  protected async claim(runId: string): Promise<string | null> {
    return (await repo.claimRun(this.ctx.db, runId, this.runner, this.options.leaseMs)) ? runId : null;
  }

  protected unclaimed(limit: number): Promise<string[]> {
    return repo.unclaimedRuns(this.ctx.db, limit);
  }

  protected renewLease(runId: string): Promise<unknown> {
    return repo.renewLease(this.ctx.db, runId, this.runner, this.options.leaseMs);
  }

  /**
   * Looks for runs to resume every `intervalMs`, then runs `alsoEachTick`
   * (the automatic re-snapshots: one loop for the feature's periodic work).
   */
  start(intervalMs: number, alsoEachTick?: () => Promise<unknown>): this {
    const tick = async () => {
      await this.resume().catch((err: unknown) =>
        this.ctx.log.warn({ reason: oneLine(err) }, 'The backfill runner could not resume runs'),
      );
      if (!this.abort.signal.aborted) await alsoEachTick?.();
    };
    return this.tickEvery(intervalMs, tick, (err) =>
      this.ctx.log.warn({ reason: oneLine(err) }, 'Automatic re-snapshots could not be decided'),
    );
  }

  /** Stops between two batches (on `stop`): the run keeps its progress and is released for another replica. */
  protected run(runId: string): Promise<void> {
    return this.execute(runId).catch((err: unknown) =>
      this.ctx.log.error({ reason: oneLine(err), backfill: runId }, 'A backfill run stopped on an error'),
    );
  }

  private async execute(runId: string): Promise<void> {
    const { db } = this.ctx;
    const signal = this.abort.signal;
    const stopHeartbeat = this.heartbeat(runId);
    try {
      const run = await repo.findRun(db, runId);
      if (!run) return;
      if (run.cancel_requested) {
        await repo.finishRun(db, runId, 'cancelled', null);
        return;
      }
      const items = await repo.itemsOf(db, runId);
      for (const item of items) {
        if (item.state !== 'pending' && item.state !== 'running') continue;
        let outcome: Outcome;
        try {
          outcome = await this.runItem(run, item, signal);
        } catch (e) {
          if (signal.aborted) outcome = 'lost';
          else {
            const reason = oneLine(e);
            await repo.setItemState(db, runId, item.position, 'failed', reason);
            await repo.finishRun(
              db,
              runId,
              'failed',
              `${item.datamodel_name} → ${item.target_table_name}: ${reason}`,
            );
            // The reason is in the run's `error`; it may quote the target's answer, so not logged.
            this.ctx.log.warn({ backfill: runId, item: item.position }, 'A backfill item failed');
            return;
          }
        }
        if (outcome === 'lost') {
          if (signal.aborted) await repo.releaseRun(db, runId, this.runner);
          return;
        }
        if (outcome === 'cancelled') {
          await repo.finishRun(db, runId, 'cancelled', null);
          this.ctx.log.info({ backfill: runId }, 'Backfill cancelled');
          return;
        }
        await repo.setItemState(db, runId, item.position, 'succeeded');
      }
      const unresumed = await resumeBinlogSources(this.ctx, run, items);
      if (unresumed) {
        await repo.finishRun(db, runId, 'failed', unresumed);
        return;
      }
      await repo.finishRun(db, runId, 'succeeded', null);
      this.ctx.log.info({ backfill: runId }, 'Backfill succeeded');
    } finally {
      stopHeartbeat();
    }
  }

  /** Replays one (data model, target) pair from its recorded progress to its end. */
  private async runItem(run: BackfillRunRow, item: BackfillItemRow, signal: AbortSignal): Promise<Outcome> {
    const o = this.options;
    // Before the first batch: the lease is still ours and no cancel came meanwhile.
    const start = await repo.recordProgress(
      this.ctx.db,
      run.id,
      item.position,
      this.runner,
      o.leaseMs,
      item.progress,
      0,
    );
    if (!start) return 'lost';
    if (start.cancel) return 'cancelled';
    const { config, sink } = await openTarget(this.ctx, item.subscription_id);
    try {
      const sub = prepareSubscription(config.subscriptions![0]!);
      const subsOf = new Map([[sub.config.topic, [sub]]]);
      const wctx: WorkerContext = {
        metrics: new MetricsRegistry(),
        log: (level, msg, fields) => this.ctx.log[level]({ ...fields, backfill: run.id }, msg),
      };
      const metrics = targetMetrics(wctx);
      /** Writes a batch and records where the item stands; the outcome when the item must stop. */
      const write = async (messages: ConsumedMessage[], progress: unknown): Promise<Outcome | null> => {
        if (messages.length > 0)
          await writeBatch(messages, { subsOf, sink, signal, ctx: wctx, m: metrics, o });
        if (signal.aborted) return 'lost'; // not confirmed: the next runner writes this batch again
        const r = await repo.recordProgress(
          this.ctx.db,
          run.id,
          item.position,
          this.runner,
          o.leaseMs,
          progress,
          messages.length,
        );
        if (!r) return 'lost';
        return r.cancel ? 'cancelled' : null;
      };
      return item.mode === 'stream'
        ? await this.replayStream(item, sub.config.topic, write)
        : await this.resnapshot(item, sub.config.topic, write);
    } finally {
      await sink.close().catch(() => undefined);
    }
  }

  private async replayStream(
    item: BackfillItemRow,
    topic: string,
    write: (m: ConsumedMessage[], progress: unknown) => Promise<Outcome | null>,
  ): Promise<Outcome> {
    const progress = item.progress as { partitions: StreamRange; tail?: boolean };
    const client = await openStreamClient(this.ctx, item.source_connector_id).catch((e: unknown) => {
      throw new Error(describeStreamFailure(e), { cause: e });
    });
    try {
      for (;;) {
        let idle = 0;
        while (remainingIn(progress.partitions) > 0) {
          const before = JSON.stringify(progress.partitions);
          const { messages } = await fetchRange(client, topic, progress.partitions, {
            maxBytes: this.options.fetchBytes,
            maxMessages: this.options.batchSize,
          });
          // Offsets that hold nothing (compacted, aborted transactions) move the range on their own.
          idle = JSON.stringify(progress.partitions) === before ? idle + 1 : 0;
          if (idle > 20)
            throw new Error(`The stream ${topic} returns no more messages before its end offsets`);
          const stop = await write(messages, progress);
          if (stop) return stop;
        }
        if (progress.tail) return 'done';
        // The tail, once: what arrived since the trigger. The replay's last write of a key is then
        // a recent version rather than one the live worker had already superseded.
        const now = await retainedRange(client, topic);
        for (const [partition, r] of Object.entries(progress.partitions))
          r.end = now[partition]?.end ?? r.end;
        progress.tail = true;
        const stop = await write([], progress);
        if (stop) return stop;
      }
    } finally {
      await client.close(true).catch(() => undefined);
    }
  }

  private async resnapshot(
    item: BackfillItemRow,
    topic: string,
    write: (m: ConsumedMessage[], progress: unknown) => Promise<Outcome | null>,
  ): Promise<Outcome> {
    const progress = item.progress as { after: unknown[] | null };
    const reader = await openSourceTables(this.ctx, item.source_connector_id);
    // The source's failures in its own words (no statement); the target's come from writeBatch.
    const fromSource = <T>(read: Promise<T>) =>
      read.catch((e: unknown) => {
        throw new Error(reader.describe(e), { cause: e });
      });
    try {
      const entry = (await this.entryOf(item)) ?? '';
      const table = await fromSource(reader.table(entry));
      let replayed = Number(item.messages_replayed);
      for (;;) {
        const { rows, next } = await fromSource(table.page(progress.after, this.options.batchSize));
        if (rows.length === 0) return 'done';
        const messages = snapshotMessages(
          rows,
          { columns: table.keyColumns },
          {
            connectorId: item.source_connector_id,
            datamodelId: item.datamodel_id,
            entry,
            topic,
            first: replayed,
          },
        );
        progress.after = next;
        const stop = await write(messages, progress);
        if (stop) return stop;
        replayed += rows.length;
        if (rows.length < this.options.batchSize) return 'done';
      }
    } finally {
      await reader.close();
    }
  }

  private async entryOf(item: BackfillItemRow): Promise<string | undefined> {
    const [dm] = await repo.datamodelsByIds(this.ctx.db, [item.datamodel_id]);
    if (!dm) throw new Error('The data model no longer exists');
    return dm.entry;
  }
}

const runners = runnerPerDatabase((ctx) => new BackfillRunner(ctx));

/** The backfill runner of this context's service database (made on first use). */
export function backfillRunner(ctx: GatewayContext): BackfillRunner {
  return runners.of(ctx);
}

/** Stops the runner of this context, if one was made (gateway shutdown). */
export function stopBackfillRunner(ctx: GatewayContext): Promise<void> {
  return runners.stop(ctx);
}
