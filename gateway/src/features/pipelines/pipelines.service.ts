import {
  PIPELINE_CALLS,
  PIPELINE_STATES,
  nextState,
  sourceWorkerConfig,
  targetWorkerConfig,
  writesTables,
  type ConnectorResource,
  type ConnectorSpec,
  type DataModelResource,
  type DataModelSpec,
  type PipelineCall,
  type PipelineResource,
  type PipelineState,
  type PipelineStatus,
  type SubscriptionResource,
  type SubscriptionSpec,
  type SubscriptionStatus,
  RESTART_ANNOTATION,
  STOP_ANNOTATION,
  withEffectiveEnabled,
} from '@sluice/shared/catalog';
import { hasPrimaryKey, type MapperRule } from '@sluice/shared/mapper';
import {
  type PipelineConfiguration,
  type PipelineCount,
  type PipelineCreate,
  type PipelineLatency,
  type PipelineListQuery,
  type PipelineRead,
  type PipelineUpdate,
} from '@sluice/shared/schemas';
import { requireTeam } from '../../auth/access.js';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import { conflict, HttpError, invalid, notFound, type ValidationIssue } from '../../http/errors.js';
import { offsetOf, pageOf } from '../../http/pagination.js';
import { connectorUsers } from '../connectors/connectors.repository.js';
import { deleteConnectorObjects } from '../connectors/connectors.service.js';
import { deleteSubscriptionObjects } from '../subscriptions/subscriptions.service.js';
import { sourceRetentionRead } from '../monitoring/monitoring.read.js';
import {
  toPipelineConfiguration,
  toPipelineRead,
  toPipelineStatusRead,
  type PipelineBundle,
} from './pipelines.mapper.js';
import { planCreate, planUpdate, type PipelineObjects } from './pipelines.plan.js';
import * as repo from './pipelines.repository.js';

export async function loadPipeline(ctx: GatewayContext, p: Principal, id: string) {
  const row = await repo.findPipeline(ctx.db, id);
  if (!row) throw notFound('Pipeline not found');
  await requireTeam(ctx.db, p, row.team_id as string, 'member');
  return row;
}

async function bundleOf(ctx: GatewayContext, row: repo.PipelineRecord): Promise<PipelineBundle> {
  const connectors = await repo.specsById(ctx.db, 'mirror_connectors', [
    row.source_connector_id,
    row.target_connector_id,
  ]);
  const dms = await repo.specsById(ctx.db, 'mirror_datamodels', [row.datamodel_id]);
  const subs = await repo.specsById(ctx.db, 'mirror_subscriptions', [row.subscription_id]);
  const source = connectors.get(row.source_connector_id);
  const target = connectors.get(row.target_connector_id);
  const dm = dms.get(row.datamodel_id);
  const sub = subs.get(row.subscription_id);
  // Objects applied from outside may reference what does not exist (yet).
  if (!source || !target || !dm || !sub) throw conflict('The pipeline references objects that do not exist');
  return {
    source: { id: row.source_connector_id, ...source, spec: source.spec as ConnectorSpec },
    target: { id: row.target_connector_id, ...target, spec: target.spec as ConnectorSpec },
    datamodel: { id: row.datamodel_id, spec: dm.spec as DataModelSpec },
    subscription: { id: row.subscription_id, ...sub, spec: sub.spec as SubscriptionSpec },
  };
}

async function read(ctx: GatewayContext, row: repo.PipelineRecord): Promise<PipelineRead> {
  return toPipelineRead(row, await bundleOf(ctx, row));
}

export async function getPipeline(ctx: GatewayContext, p: Principal, id: string): Promise<PipelineRead> {
  return read(ctx, await loadPipeline(ctx, p, id));
}

async function assertNameFree(ctx: GatewayContext, teamId: string, name: string, except?: string) {
  const other = await repo.findPipelineByName(ctx.db, teamId, name);
  if (other && other.id !== except) throw conflict(`A pipeline named "${name}" already exists in this team`);
}

/** Both shapes of spec 2.6: `json_configuration` makes it the nested one. */
export async function createPipeline(ctx: GatewayContext, p: Principal, body: PipelineCreate) {
  await requireTeam(ctx.db, p, body.team_id, 'member', ['body', 'team_id']);
  if (body.state !== undefined && body.state !== 'draft') {
    throw invalid(['body', 'state'], 'A new pipeline is a draft: create it, then POST /pipelines/{id}/start');
  }
  let flat: PipelineCreate = body;
  let extra: { smtName?: string; draftStep?: string } = {};
  const nested = body.json_configuration;
  if (nested) {
    const mixed = Object.keys(body).filter(
      (k) => !['name', 'team_id', 'state', 'json_configuration'].includes(k),
    );
    if (mixed.length > 0) {
      throw invalid(
        ['body', mixed[0] as string],
        'The nested shape takes json_configuration; give this field there or use the flattened shape',
      );
    }
    flat = {
      name: body.name,
      team_id: body.team_id,
      source_name: nested.source_name,
      source_type: nested.source_type,
      source_config: nested.source_config,
      target_name: nested.target_name,
      target_type: nested.target_type,
      target_config: nested.target_config,
      ...(nested.smt_config ? { subscription_mapper_config: nested.smt_config } : {}),
    };
    extra = { smtName: nested.smt_name ?? undefined, draftStep: nested.draft_step ?? undefined };
  }
  await assertNameFree(ctx, body.team_id, body.name);
  try {
    const plan = await planCreate(ctx, p, flat, extra);
    await ctx.catalog.runSteps(plan.steps);
    return getPipeline(ctx, p, plan.pipeline.metadata.name);
  } catch (err) {
    throw nested ? inNestedShape(err) : err;
  }
}

/** Where each flattened field came from in the nested shape (the mapping above). */
const NESTED_FIELD: Record<string, string> = {
  source_name: 'source_name',
  source_type: 'source_type',
  source_config: 'source_config',
  target_name: 'target_name',
  target_type: 'target_type',
  target_config: 'target_config',
  subscription_mapper_config: 'smt_config',
};

/**
 * A 422 of a nested-shape request, located where the client put the field
 * (`["body","json_configuration","source_config","topic"]`), not in the
 * flattened shape it was checked in.
 */
function inNestedShape(err: unknown): unknown {
  if (!(err instanceof HttpError) || err.status !== 422 || !Array.isArray(err.detail)) return err;
  const issues = (err.detail as ValidationIssue[]).map((i) => {
    const [where, field, ...rest] = i.loc;
    const nestedName = typeof field === 'string' ? NESTED_FIELD[field] : undefined;
    return where === 'body' && nestedName
      ? { ...i, loc: ['body', 'json_configuration', nestedName, ...rest] }
      : i;
  });
  return new HttpError(422, issues, err.headers);
}

export async function listPipelines(ctx: GatewayContext, p: Principal, q: PipelineListQuery) {
  if (q.team_id) await requireTeam(ctx.db, p, q.team_id, 'member');
  const { rows, total } = await repo.listPipelines(ctx.db, p, q, offsetOf(q.page, q.size), q.size);
  const items = rows.map((r) => ({
    id: r.id,
    name: r.name,
    state: r.state as PipelineState,
    owner: r.owner,
    source_name: r.source_name ?? '',
    source_type: (r.source_type ?? 'KAFKA_SOURCE') as PipelineRead['source_type'],
    target_name: r.target_name ?? '',
    target_type: (r.target_type ?? 'KAFKA_TARGET') as PipelineRead['target_type'],
    transform: Number(r.transform),
  }));
  return pageOf(items, total, q.page, q.size);
}

export async function findPipelineByName(ctx: GatewayContext, p: Principal, name: string, teamId?: string) {
  if (teamId) await requireTeam(ctx.db, p, teamId, 'member');
  const row = await repo.findVisiblePipelineByName(ctx.db, p, name, teamId);
  if (!row) throw notFound('Pipeline not found');
  return read(ctx, row);
}

export async function countStatus(
  ctx: GatewayContext,
  p: Principal,
  teamId?: string,
): Promise<PipelineCount> {
  if (teamId) await requireTeam(ctx.db, p, teamId, 'member');
  const counts = await repo.countByState(ctx.db, p, teamId);
  const out = { all: 0, draft: 0, building: 0, live: 0, paused: 0, error: 0 };
  for (const state of PIPELINE_STATES) {
    out[state] = counts[state] ?? 0;
    out.all += out[state];
  }
  return out;
}

export async function getStatus(ctx: GatewayContext, p: Principal, id: string) {
  return toPipelineStatusRead(await loadPipeline(ctx, p, id));
}

export async function listNonDraft(ctx: GatewayContext, p: Principal, q: PipelineListQuery) {
  if (q.team_id) await requireTeam(ctx.db, p, q.team_id, 'member');
  const { rows, total } = await repo.listPipelineStatuses(
    ctx.db,
    p,
    { ...q, nonDraft: true },
    offsetOf(q.page, q.size),
    q.size,
  );
  return pageOf(rows.map(toPipelineStatusRead), total, q.page, q.size);
}

async function objectsOf(ctx: GatewayContext, id: string): Promise<PipelineObjects> {
  const pipeline = await ctx.catalog.get<PipelineResource>('Pipeline', id);
  if (!pipeline) throw notFound('Pipeline not found');
  const s = pipeline.spec;
  const [source, target, datamodel, subscription] = await Promise.all([
    ctx.catalog.get<ConnectorResource>('Connector', s.sourceConnectorId),
    ctx.catalog.get<ConnectorResource>('Connector', s.targetConnectorId),
    ctx.catalog.get<DataModelResource>('DataModel', s.datamodelId),
    ctx.catalog.get<SubscriptionResource>('Subscription', s.subscriptionId),
  ]);
  if (!source || !target || !datamodel || !subscription) {
    throw conflict('The pipeline references objects that do not exist');
  }
  return { pipeline, source, target, datamodel, subscription };
}

/** Spec 4.4 update patterns; every change adds 1 to `version`. */
export async function updatePipeline(ctx: GatewayContext, p: Principal, id: string, body: PipelineUpdate) {
  const row = await loadPipeline(ctx, p, id);
  if (body.team_id !== undefined && body.team_id !== row.team_id) {
    throw invalid(['body', 'team_id'], 'A pipeline cannot move to another team');
  }
  const { team_id: _team, name, ...flat } = body;
  if (name !== undefined && name !== row.name) await assertNameFree(ctx, row.team_id as string, name, id);
  const plan = await planUpdate(ctx, p, await objectsOf(ctx, id), { ...flat, name });
  await ctx.catalog.runSteps(plan.steps);
  await dropOrphans(ctx, plan.orphans, id);
  return getPipeline(ctx, p, id);
}

/** Connectors a pipeline created and no longer uses go, unless something else took them up. */
async function dropOrphans(ctx: GatewayContext, ids: string[], pipelineId: string): Promise<void> {
  for (const id of ids) {
    const users = await connectorUsers(ctx.db, id);
    const others = await repo.otherUsersOfConnector(ctx.db, id, pipelineId);
    if (users.subscriptions.length === 0 && others === 0) await deleteConnectorObjects(ctx, id);
  }
}

export async function exportConfiguration(ctx: GatewayContext, p: Principal, id: string) {
  const row = await loadPipeline(ctx, p, id);
  return toPipelineConfiguration(row, await bundleOf(ctx, row));
}

/** Applies an exported (and edited) configuration as the next version. */
export async function importConfiguration(
  ctx: GatewayContext,
  p: Principal,
  id: string,
  body: PipelineConfiguration,
) {
  const row = await loadPipeline(ctx, p, id);
  if (body.version !== row.version) {
    throw conflict(
      `The configuration is of version ${body.version}; the pipeline is at version ${row.version}`,
    );
  }
  const { version: _v, ...update } = body;
  return updatePipeline(ctx, p, id, update);
}

/** The pipeline, its subscription, and the connectors it created (unless something else uses them). */
export async function deletePipeline(ctx: GatewayContext, p: Principal, id: string): Promise<void> {
  await loadPipeline(ctx, p, id);
  const pipeline = await ctx.catalog.get<PipelineResource>('Pipeline', id);
  if (!pipeline) throw notFound('Pipeline not found');
  const s = pipeline.spec;
  await ctx.catalog.delete('Pipeline', id);
  await deleteSubscriptionObjects(ctx, s.subscriptionId);
  const owned = [
    ...(s.ownsSource ? [s.sourceConnectorId] : []),
    ...(s.ownsTarget ? [s.targetConnectorId] : []),
  ];
  await dropOrphans(ctx, owned, id);
}

/** Spec 3.1: start (202 "BUILDING") and pause (202 "PAUSED"); other states are a 409 naming the state. */
export async function runPipeline(ctx: GatewayContext, p: Principal, id: string, call: PipelineCall) {
  const row = await loadPipeline(ctx, p, id);
  const state = row.state as PipelineState;
  const to = nextState(PIPELINE_CALLS[call], state);
  if (!to) throw conflict(`The pipeline is ${state}: ${call} is not allowed in this state`);
  if (call === 'start') {
    const { target, subscription } = await objectsOf(ctx, id);
    const rules = subscription.spec.mapperConfig as unknown as MapperRule[];
    if (writesTables(target.spec.connectorType) && !hasPrimaryKey(rules)) {
      throw conflict(
        `${target.spec.connectorType} writes tables: give subscription_mapper_config a primary-key rule before starting`,
      );
    }
  }
  await ctx.catalog.patch('Pipeline', id, {
    // A start always restarts the worker(s), so a retry from error really
    // retries; the time of each call orders it against calls on the parts
    // (an explicit stop of one of its connectors sticks, effective-state.ts).
    metadata: {
      annotations: { [call === 'start' ? RESTART_ANNOTATION : STOP_ANNOTATION]: new Date().toISOString() },
    },
    spec: { desiredState: call === 'start' ? 'running' : 'paused' },
  });
  await ctx.catalog.patchStatus('Pipeline', id, { state: to, message: null });
  return to.toUpperCase();
}

export async function workerConfig(ctx: GatewayContext, p: Principal, id: string) {
  await loadPipeline(ctx, p, id);
  const o = await objectsOf(ctx, id);
  return {
    pipeline_id: id,
    source: sourceWorkerConfig(o.source, [o.datamodel]),
    // As the operator gives it: the subscription's effective switch (this pipeline's, when it runs).
    target: targetWorkerConfig(o.target, [
      {
        subscription: withEffectiveEnabled(o.subscription, [o.pipeline]),
        datamodel: o.datamodel,
        source: o.source,
      },
    ]),
  };
}

/**
 * Latency and counters of the pipeline (or its subscription) as the monitoring
 * collector wrote them, and the retained WAL of its source's slot or its
 * source's binary log figures (measured now when the source is paused and the
 * last figure is stale); null until then.
 */
export async function latency(ctx: GatewayContext, p: Principal, id: string): Promise<PipelineLatency> {
  const row = await loadPipeline(ctx, p, id);
  const subs = await repo.specsById(ctx.db, 'mirror_subscriptions', [row.subscription_id]);
  const monitoring =
    (row.status as PipelineStatus | null)?.monitoring ??
    (subs.get(row.subscription_id)?.status as SubscriptionStatus | null)?.monitoring;
  const l = monitoring?.latencyMs;
  return {
    pipeline_id: id,
    p50_ms: l?.p50 ?? null,
    p95_ms: l?.p95 ?? null,
    p99_ms: l?.p99 ?? null,
    samples: l?.samples ?? 0,
    last_event_at: monitoring?.lastEventTime ?? null,
    messages_in: monitoring?.messagesIn ?? 0,
    messages_out: monitoring?.messagesOut ?? 0,
    errors: monitoring?.errors ?? 0,
    ...(await sourceRetentionRead(ctx, row.source_connector_id)),
    reported_at: monitoring?.reportedAt ?? null,
  };
}
