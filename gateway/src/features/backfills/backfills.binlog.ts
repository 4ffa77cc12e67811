import {
  describeKafkaFailure,
  platformStream,
  resumeAfterResnapshot,
  type BinlogPosition,
} from '@sluice/dataplane';
import { oneLine } from '@sluice/shared/util';
import type { GatewayContext } from '../../context.js';
import type { BackfillItemRow, BackfillRunRow } from '../../db/schema.js';
import { openSourceTables } from './backfills.connections.js';
import * as repo from './backfills.repository.js';

// The end of a run that re-snapshotted MySQL or MariaDB sources: a source
// whose recorded binary log position the server purged (its worker stopped
// in `error` on it) resumes from the position its re-snapshot is consistent
// from, once every enabled subscription of the source was re-snapshotted
// (dataplane backfill/binlog-resume.ts; docs/data-plane-mysql.md).

/**
 * Resolves with a sentence when a source's position could not be recorded
 * (the run then fails with it: its rows were written, the worker would stay
 * stopped), else null.
 */
export async function resumeBinlogSources(
  ctx: GatewayContext,
  run: BackfillRunRow,
  items: readonly BackfillItemRow[],
): Promise<string | null> {
  const bySource = new Map<string, { from: BinlogPosition; subscriptions: Set<string> }>();
  for (const item of items) {
    const from = (item.progress as { binlog?: BinlogPosition } | null)?.binlog;
    if (!from) continue;
    const entry = bySource.get(item.source_connector_id) ?? { from, subscriptions: new Set<string>() };
    entry.subscriptions.add(item.subscription_id);
    bySource.set(item.source_connector_id, entry);
  }
  for (const [sourceId, { from, subscriptions }] of bySource) {
    const datamodels = await repo.enabledDatamodelsOf(ctx.db, [sourceId]);
    const all = datamodels.length
      ? await repo.subscriptionsOf(
          ctx.db,
          datamodels.map((d) => d.id),
          [],
        )
      : [];
    const covered = all.every((s) => subscriptions.has(s.id));
    let outcome;
    try {
      const reader = await openSourceTables(ctx, sourceId);
      try {
        const platform = platformStream();
        outcome = await resumeAfterResnapshot(platform, sourceId, reader, from, covered).catch(
          (e: unknown) => {
            // The server's answers carry an SQL state; the rest is the platform broker's.
            const server = typeof (e as { sqlState?: unknown }).sqlState === 'string';
            throw new Error(
              server ? reader.describe(e) : describeKafkaFailure(e, platform.brokers.join(',')),
              { cause: e },
            );
          },
        );
      } finally {
        await reader.close();
      }
    } catch (e) {
      return `The tables were re-read, but the binary log position of ${sourceId} could not be recorded: ${oneLine(e)}`;
    }
    if (outcome === 'recorded')
      ctx.log.info(
        { backfill: run.id, source: sourceId, file: from.file, offset: from.offset, gtid: from.gtid },
        "The source's purged binary log position was replaced by the re-snapshot's: its worker resumes there",
      );
    else if (outcome === 'partial')
      ctx.log.warn(
        { backfill: run.id, source: sourceId },
        "The source's binary log position was purged, and this re-snapshot did not cover every subscription of the source: the position is left, the worker stays stopped until all of them are re-snapshotted",
      );
  }
  return null;
}
