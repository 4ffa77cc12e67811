import { groupHasReadTopic, platformStream, streamStart, type StreamStart } from '@sluice/dataplane';
import {
  changeStreamTopic,
  type ConnectorResource,
  type DataModelResource,
  type SubscriptionSpec,
  type SubscriptionStatus,
} from '@sluice/shared/catalog';
import { oneLine } from '@sluice/shared/util';
import type { GatewayContext } from '../../context.js';
import { recordConsumedAtSwitch } from '../../mirror/mirror.repository.js';
import { resourceOf } from '../../mirror/projections.js';
import { backfillTargetTypes, openPlatformStreamClient, openStreamClient } from './backfills.connections.js';
import { backfillModeOf, planSubscriptionBackfill, snapshotSourceTypes } from './backfills.plan.js';
import { TURNED_ON_LATER } from './backfills.reasons.js';
import * as repo from './backfills.repository.js';
import { startRun } from './backfills.service.js';

// Automatic re-snapshots and replays: once per subscription and switch of
// its `backfill`, a replica's tick decides whether the target worker's own
// read of the stream brings the table's past or a backfill run must. The
// rules, and what records each decision durably, are told once, in
// docs/data-plane.md "Backfills" (**Automatic re-snapshots**).

export type AutoRow = Awaited<ReturnType<typeof repo.undecidedBackfillSubscriptions>>[number];

export type AutoDecision =
  | { action: 'wait' }
  | { action: 'probe'; topic: string }
  | { action: 'skip'; reason: string }
  | { action: 'snapshot'; reason: string }
  | { action: 'replay'; reason: string };

const STARTS: Record<Exclude<StreamStart, 'snapshot'>, string> = {
  absent: 'the change stream does not exist although the source is live',
  empty: 'the change stream holds no message',
  truncated: "retention removed the beginning of the change stream, and the source's snapshot with it",
  changes:
    "the change stream does not begin with the source's snapshot (data model added after the source's first start)",
};

/** The change stream a subscription's target worker reads, from its mirror row. */
function streamTopicOf(row: {
  source_id: string;
  source_spec: unknown;
  datamodel_id: string;
  datamodel_spec: unknown;
}): string {
  return changeStreamTopic(
    resourceOf<ConnectorResource>(row.source_id, row.source_spec),
    resourceOf<DataModelResource>(row.datamodel_id, row.datamodel_spec),
  );
}

/**
 * What to do for a subscription still undecided: pure, from its mirror row
 * and, once probed, how its stream begins. A subscription whose `backfill`
 * was turned on after its creation is replayed in its source's mode without
 * a probe: its consumer is past the stream's beginning, whatever that holds.
 */
export function decideAutoBackfill(row: AutoRow, start?: StreamStart): AutoDecision {
  const mode = backfillModeOf(row.source_type);
  const later = row.turned_on_later;
  if (mode === 'stream' && !later)
    return {
      action: 'skip',
      reason: `a ${row.source_type}'s retained topic is the stream the subscription reads`,
    };
  if (!mode)
    return { action: 'skip', reason: `backfills of ${row.source_type} are not supported by this version` };
  if (!row.team_id) return { action: 'skip', reason: 'the subscription belongs to no team' };
  if (!backfillTargetTypes().includes(row.target_type))
    return { action: 'skip', reason: `backfills into ${row.target_type} are not supported by this version` };
  // Only once data flows: a pipeline never started gets nothing written into its target.
  // (The query reads only those; this holds should a row change between the two.)
  if (!row.enabled || !row.datamodel_enabled || row.source_state !== 'live' || row.target_state !== 'live')
    return { action: 'wait' };
  if (later) return { action: mode === 'stream' ? 'replay' : 'snapshot', reason: TURNED_ON_LATER };
  if (start === undefined) {
    return { action: 'probe', topic: streamTopicOf(row) };
  }
  if (start === 'snapshot')
    return { action: 'skip', reason: "the change stream begins with the source's snapshot" };
  return { action: 'snapshot', reason: STARTS[start] };
}

export interface AutoOutcome {
  subscriptionId: string;
  decision: AutoDecision;
  runId?: string;
}

/** Contexts already told that the platform stream is not configured (said once, not every tick). */
const told = new WeakSet<object>();

/** Whether the platform stream broker is known; without it nothing can be decided (logged once). */
function platformConfigured(ctx: GatewayContext): boolean {
  try {
    platformStream();
    return true;
  } catch {
    if (!told.has(ctx.db)) {
      told.add(ctx.db);
      ctx.log.warn(
        'SLUICE_STREAM_BROKERS is not set on the gateway: new subscriptions with backfill are not checked for a missing snapshot',
      );
    }
    return false;
  }
}

/** Subscriptions looked at per tick at most. */
const PER_TICK = 20;

/**
 * One pass over the undecided subscriptions created within `maxAgeMs`
 * (0: the feature is off). A subscription that must wait, or whose source a
 * run already holds, is looked at again next tick.
 */
export async function autoBackfills(ctx: GatewayContext, maxAgeMs: number): Promise<AutoOutcome[]> {
  if (maxAgeMs <= 0) return [];
  await lookAtSwitches(ctx, maxAgeMs);
  const rows = await repo.undecidedBackfillSubscriptions(ctx.db, {
    maxAgeMs,
    snapshotSourceTypes: snapshotSourceTypes(),
    limit: PER_TICK,
  });
  const outcomes: AutoOutcome[] = [];
  let client: ReturnType<typeof openPlatformStreamClient> | undefined;
  try {
    for (const row of rows) {
      try {
        let decision = decideAutoBackfill(row);
        if (decision.action === 'probe') {
          if (!platformConfigured(ctx)) continue;
          client ??= openPlatformStreamClient();
          decision = decideAutoBackfill(row, await streamStart(client, decision.topic));
        }
        outcomes.push({ subscriptionId: row.subscription_id, decision, ...(await act(ctx, row, decision)) });
      } catch (e) {
        // Decided at a later tick: the platform broker or the source may be back by then.
        ctx.log.warn(
          { subscription: row.subscription_id, reason: oneLine(e) },
          'Could not decide on a re-snapshot yet',
        );
      }
    }
  } finally {
    await client?.close(true).catch(() => undefined);
  }
  return outcomes;
}

/**
 * For each subscription whose `backfill` was turned on since the last look:
 * whether its consumer group had read the stream by then. Looked at once per
 * switch, as soon as the tick sees it (connectors live or not), so that a
 * worker started afterwards, reading from the earliest offset and committing,
 * does not pass for one that had read the stream before. One that cannot be
 * looked at yet (broker unreachable) is tried again next tick.
 */
async function lookAtSwitches(ctx: GatewayContext, maxAgeMs: number): Promise<void> {
  const rows = await repo.uncheckedSwitches(ctx.db, { maxAgeMs, limit: PER_TICK });
  for (const row of rows) {
    const groupId = (row.subscription_spec as SubscriptionSpec).consumerId;
    let client: ReturnType<typeof openPlatformStreamClient> | undefined;
    try {
      // The stream the target worker reads: the Kafka source's own cluster, else the platform's.
      if (backfillModeOf(row.source_type) === 'stream') {
        client = await openStreamClient(ctx, row.source_id, groupId);
      } else {
        if (!platformConfigured(ctx)) continue;
        client = openPlatformStreamClient(groupId);
      }
      const consumed = await groupHasReadTopic(client, streamTopicOf(row));
      // False: another replica looked first, or the flag switched again meanwhile.
      if (!(await recordConsumedAtSwitch(ctx.db, row.subscription_id, row.switched_at, consumed))) continue;
      ctx.log.info(
        { subscription: row.subscription_id, consumerGroup: groupId, consumed },
        consumed
          ? 'Backfill turned on for a subscription whose consumer has read its stream: it is replayed once live'
          : 'Backfill turned on for a subscription whose consumer has not read its stream: it reads it from the beginning, and is checked as a new one',
      );
    } catch (e) {
      ctx.log.warn(
        { subscription: row.subscription_id, reason: oneLine(e) },
        "Could not look at the subscription consumer's offsets yet",
      );
    } finally {
      await client?.close(true).catch(() => undefined);
    }
  }
}

/** Records a skip, or starts the run with its decision (one transaction); nothing for a wait. */
async function act(ctx: GatewayContext, row: AutoRow, decision: AutoDecision): Promise<{ runId?: string }> {
  if (decision.action === 'skip') {
    // False: another replica decided first, and says so itself.
    if (!(await repo.recordSkipped(ctx.db, row.subscription_id, decision.reason))) return {};
    ctx.log.info(
      { subscription: row.subscription_id, reason: decision.reason },
      'No re-snapshot for a new subscription with backfill',
    );
    await showOnResource(ctx, row);
    return {};
  }
  if (decision.action !== 'snapshot' && decision.action !== 'replay') return {};
  const item = await planSubscriptionBackfill(ctx, {
    subscriptionId: row.subscription_id,
    datamodelId: row.datamodel_id,
    sourceId: row.source_id,
    targetId: row.target_id,
  });
  if (!item) return {};
  // Null: a run holds the source (next tick), or another replica decided first.
  const runId = await startRun(
    ctx,
    { teamId: row.team_id!, createdBy: null, sourceIds: [row.source_id] },
    [item],
    { subscription_id: row.subscription_id, reason: decision.reason },
  );
  if (!runId) return {};
  ctx.log.info(
    { subscription: row.subscription_id, backfill: runId, reason: decision.reason },
    row.turned_on_later
      ? 'Backfill started for a subscription whose backfill was turned on'
      : 'Re-snapshot started for a new subscription with backfill',
  );
  await showOnResource(ctx, row);
  return { runId };
}

/**
 * Writes the decision into the Subscription's status too, for whoever reads
 * the resource (`kubectl get -o yaml`, Argo CD): the record just written,
 * read back, so the status says what the service database holds, on its
 * clock. A failed status write is logged and not retried.
 */
async function showOnResource(ctx: GatewayContext, row: AutoRow): Promise<void> {
  try {
    const decided = await repo.autoDecisionOf(ctx.db, row.subscription_id);
    if (!decided) return;
    const autoBackfill: NonNullable<SubscriptionStatus['autoBackfill']> = {
      state: decided.decision,
      reason: decided.reason,
      ...(decided.run_id ? { backfillId: decided.run_id } : {}),
      decidedAt: new Date(decided.decided_at).toISOString(),
    };
    await ctx.cluster.patchStatus('Subscription', row.namespace, row.subscription_id, { autoBackfill });
  } catch (e) {
    ctx.log.warn(
      { subscription: row.subscription_id, reason: oneLine(e) },
      'Could not write the re-snapshot decision into the Subscription status',
    );
  }
}
