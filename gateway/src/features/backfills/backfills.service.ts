import type {
  BackfillItemRead,
  BackfillPreview,
  BackfillRequest,
  BackfillRunRead,
} from '@sluice/shared/schemas';
import { requireTeam } from '../../auth/access.js';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import { conflict, notFound } from '../../http/errors.js';
import type { BackfillItemRow, BackfillRunRow } from '../../db/schema.js';
import { toIso, toIsoOrNull } from '../../db/timestamps.js';
import { loadConnector } from '../connectors/connectors.service.js';
import { planBackfill, type PlannedItem } from './backfills.plan.js';
import * as repo from './backfills.repository.js';
import { backfillRunner } from './backfills.runner.js';

// Backfills (spec 4.7): preview, trigger, status, cancel. The rules are in
// backfills.plan.ts (what a request means) and backfills.runner.ts (how a
// run executes); this file answers the API.

function toItemRead(i: BackfillItemRow): BackfillItemRead {
  return {
    source_connector_id: i.source_connector_id,
    datamodel_id: i.datamodel_id,
    datamodel_name: i.datamodel_name,
    target_connector_id: i.target_connector_id,
    subscription_id: i.subscription_id,
    target_table_name: i.target_table_name,
    mode: i.mode,
    estimated_messages: Number(i.estimated_messages),
    state: i.state,
    messages_replayed: Number(i.messages_replayed),
    error: i.error,
  };
}

function toRunRead(run: BackfillRunRow, items: BackfillItemRow[]): BackfillRunRead {
  const reads = items.map(toItemRead);
  return {
    id: run.id,
    team_id: run.team_id,
    state: run.state,
    cancel_requested: run.cancel_requested,
    source_connector_ids: run.source_connector_ids,
    datamodel_ids: run.datamodel_ids,
    target_connector_ids: run.target_connector_ids,
    estimated_messages: reads.reduce((n, i) => n + i.estimated_messages, 0),
    messages_replayed: reads.reduce((n, i) => n + i.messages_replayed, 0),
    error: run.error,
    created_by: run.created_by,
    created_at: toIso(run.created_at),
    started_at: toIsoOrNull(run.started_at),
    finished_at: toIsoOrNull(run.finished_at),
    items: reads,
  };
}

async function readRun(ctx: GatewayContext, run: BackfillRunRow): Promise<BackfillRunRead> {
  return toRunRead(run, await repo.itemsOf(ctx.db, run.id));
}

export async function previewBackfill(
  ctx: GatewayContext,
  p: Principal,
  body: BackfillRequest,
): Promise<BackfillPreview> {
  const { items } = await planBackfill(ctx, p, body);
  return {
    items: items.map(({ progress: _progress, ...item }) => item),
    estimated_messages: items.reduce((n, i) => n + i.estimated_messages, 0),
  };
}

export async function triggerBackfill(
  ctx: GatewayContext,
  p: Principal,
  body: BackfillRequest,
): Promise<BackfillRunRead> {
  const { teamId, items } = await planBackfill(ctx, p, body);
  const id = await startRun(
    ctx,
    { teamId, createdBy: p.user.id, sourceIds: body.source_connector_ids },
    items,
  );
  if (!id) throw conflict('A backfill of one of these source connectors is already pending or running');
  return readRun(ctx, (await repo.findRun(ctx.db, id))!);
}

/**
 * Records a run of planned items and starts it on this replica (were it to
 * stop, another one resumes it). Null when a source is held by an active run,
 * or (with `decided`) the subscription was decided meanwhile.
 */
export async function startRun(
  ctx: GatewayContext,
  run: { teamId: string; createdBy: string | null; sourceIds: string[] },
  items: PlannedItem[],
  decided?: { subscription_id: string; reason: string },
): Promise<string | null> {
  const id = await repo.insertRun(
    ctx.db,
    {
      team_id: run.teamId,
      created_by: run.createdBy,
      source_connector_ids: run.sourceIds,
      datamodel_ids: [...new Set(items.map((i) => i.datamodel_id))],
      target_connector_ids: [...new Set(items.map((i) => i.target_connector_id))],
    },
    items.map(({ progress, estimated_messages, ...item }) => ({
      ...item,
      state: 'pending',
      estimated_messages,
      progress: JSON.stringify(progress),
    })),
    decided,
  );
  if (id) await backfillRunner(ctx).launch(id);
  return id;
}

/** The latest run replaying the source connector (any state). */
export async function backfillStatus(
  ctx: GatewayContext,
  p: Principal,
  sourceId: string,
): Promise<BackfillRunRead> {
  await loadConnector(ctx, p, sourceId);
  const run = await repo.latestRunOf(ctx.db, sourceId);
  if (!run) throw notFound('No backfill has run for this source connector');
  return readRun(ctx, run);
}

export async function cancelBackfill(
  ctx: GatewayContext,
  p: Principal,
  runId: string,
): Promise<BackfillRunRead> {
  const run = await repo.findRun(ctx.db, runId);
  if (!run) throw notFound('Backfill run not found');
  await requireTeam(ctx.db, p, run.team_id, 'member');
  if (run.state !== 'pending' && run.state !== 'running') {
    throw conflict(`The backfill run has already ended (${run.state})`);
  }
  await repo.requestCancel(ctx.db, runId);
  // Nobody runs it (never claimed, or its gateway stopped): it ends here. A runner checks between batches.
  if (!run.lease_until || new Date(run.lease_until) < new Date()) {
    await repo.finishRun(ctx.db, runId, 'cancelled', null);
  }
  return readRun(ctx, (await repo.findRun(ctx.db, runId))!);
}
