import {
  DATAMODEL_LABEL,
  RESTART_ANNOTATION,
  STOP_ANNOTATION,
  TARGET_CONNECTOR_LABEL,
  TEAM_LABEL,
  writesTables,
  type ConnectorResource,
  type DataModelResource,
  type SubscriptionResource,
  type SubscriptionSpec,
} from '@sluice/shared/catalog';
import { hasPrimaryKey, type MapperRule } from '@sluice/shared/mapper';
import {
  type SubscribeAll,
  type SubscriptionCreate,
  type SubscriptionListQuery,
  type SubscriptionRead,
  type SubscriptionUpdate,
} from '@sluice/shared/schemas';
import { requireTeam } from '../../auth/access.js';
import type { Principal } from '../../auth/principal.js';
import { nextErrorTable } from '../../catalog/error-table.js';
import { prepareMapper } from '../../catalog/mapper-secrets.js';
import { managedSecretName, replaceStep, secretStep } from '../../catalog/secrets.js';
import type { Step } from '../../catalog/store.js';
import type { GatewayContext } from '../../context.js';
import {
  conflict,
  HttpError,
  invalid,
  notFound,
  unprocessable,
  type ValidationIssue,
} from '../../http/errors.js';
import { offsetOf, pageOf } from '../../http/pagination.js';
import { findConnector } from '../connectors/connectors.repository.js';
import { findDataModel } from '../datamodels/datamodels.repository.js';
import { subscriptionEffectiveStatus } from '../pipelines/pipelines.effective.js';
import { autoBackfillView, toSubscriptionRead } from './subscriptions.mapper.js';
import * as repo from './subscriptions.repository.js';

type Loc = (string | number)[];
/** The fields of a subscription write, as SubscriptionCreate/Update and the pipeline bodies give them. */
export type SubscriptionFields = Omit<SubscriptionUpdate, never>;

/** The data model and target a subscription joins (objects, possibly planned and not yet created). */
export interface SubscriptionEnds {
  datamodel: DataModelResource;
  target: ConnectorResource;
}

/** mapper_config, or its alias smt_config (spec 2.9); both is a 422, as the document says. */
export function mapperOf(body: SubscriptionFields, loc: Loc): unknown[] | undefined {
  const { mapper_config: m, smt_config: s } = body;
  if (m !== undefined && s !== undefined) {
    throw invalid([...loc, 'smt_config'], 'smt_config is another name for mapper_config: send one of them');
  }
  return m ?? s;
}

/** Default output table: the table part of the entry (`public.orders` → `orders`), or the topic. */
const defaultTable = (entry: string) => entry.slice(entry.lastIndexOf('.') + 1) || entry;

/** Rule 13 for database targets; an empty mapping is a draft and is checked on start. */
function primaryKeyIssues(target: ConnectorResource, rules: unknown[], loc: Loc): ValidationIssue[] {
  if (rules.length === 0 || !writesTables(target.spec.connectorType)) return [];
  if (hasPrimaryKey(rules as MapperRule[])) return [];
  return [
    {
      loc: [...loc, 'mapper_config'],
      msg: `${target.spec.connectorType} writes tables: the mapping needs at least one rule with primary_key true`,
      type: 'value_error',
    },
  ];
}

/** A subscription to create, with its steps; nothing is written. */
export async function planSubscription(
  ctx: GatewayContext,
  ends: SubscriptionEnds,
  body: SubscriptionFields,
  loc: Loc,
  id = crypto.randomUUID(),
): Promise<{ object: SubscriptionResource; steps: Step[] }> {
  const secretName = managedSecretName('subscription', id);
  const rules = mapperOf(body, loc) ?? [];
  const { prepared, issues } = await prepareMapper(
    ctx,
    rules,
    null,
    secretName,
    [...loc, 'mapper_config'],
    ends.target.spec.teamId,
  );
  issues.push(...primaryKeyIssues(ends.target, rules, loc));
  if (issues.length > 0) throw unprocessable(issues);
  const teamId = ends.target.spec.teamId;
  const errorTable = await nextErrorTable(ctx, teamId, { enabled: false }, body, loc);
  const dm = ends.datamodel;
  const spec: SubscriptionSpec = {
    name: body.name ?? `${dm.spec.name}-${ends.target.spec.name}`.slice(0, 255),
    teamId,
    datamodelId: dm.metadata.name,
    targetConnectorId: ends.target.metadata.name,
    targetTableName: body.target_table_name ?? defaultTable(dm.spec.entry),
    mapperConfig: prepared.rules,
    consumerId: body.consumer_id ?? `sluice-${id}`,
    backfill: body.backfill ?? false,
    enabled: body.enabled ?? true,
    errorTable,
  };
  const labels = {
    [TEAM_LABEL]: teamId,
    [DATAMODEL_LABEL]: dm.metadata.name,
    [TARGET_CONNECTOR_LABEL]: ends.target.metadata.name,
  };
  const object = ctx.catalog.object('Subscription', spec, labels, id) as SubscriptionResource;
  const secret = await secretStep(ctx, secretName, prepared.data, []);
  return { object, steps: [...(secret ? [secret] : []), ctx.catalog.createStep(object)] };
}

/**
 * The data model and target of a request, with access checks: unknown ids
 * are 422s located at their field, foreign teams 403, and both ends must
 * belong to one team, and to the release namespace, where the subscription
 * is created (docs/architecture.md, "Ids across namespaces").
 */
export async function resolveEnds(
  ctx: GatewayContext,
  p: Principal,
  datamodelId: string,
  targetId: string,
  loc: Loc,
): Promise<SubscriptionEnds> {
  const [dmRow, targetRow] = [
    await findDataModel(ctx.db, datamodelId),
    await findConnector(ctx.db, targetId),
  ];
  const issues: ValidationIssue[] = [];
  if (!dmRow) issues.push({ loc: [...loc, 'datamodel_id'], msg: 'No such data model', type: 'value_error' });
  if (!targetRow) {
    issues.push({ loc: [...loc, 'target_connector_id'], msg: 'No such connector', type: 'value_error' });
  } else if (targetRow.direction !== 'target') {
    issues.push({ loc: [...loc, 'target_connector_id'], msg: 'Not a target connector', type: 'value_error' });
  }
  if (issues.length > 0) throw unprocessable(issues);
  await requireTeam(ctx.db, p, dmRow!.team_id as string, 'member');
  await requireTeam(ctx.db, p, targetRow!.team_id as string, 'member');
  if (dmRow!.team_id !== targetRow!.team_id) {
    throw invalid(
      [...loc, 'target_connector_id'],
      'The target connector belongs to another team than the data model',
    );
  }
  const home = ctx.catalog.namespace;
  for (const issue of [
    ctx.catalog.referenceIssue('DataModel', dmRow!.namespace, home, [...loc, 'datamodel_id']),
    ctx.catalog.referenceIssue('Connector', targetRow!.namespace, home, [...loc, 'target_connector_id']),
  ]) {
    if (issue) issues.push(issue);
  }
  if (issues.length > 0) throw unprocessable(issues);
  const [datamodel, target] = await Promise.all([
    ctx.catalog.get<DataModelResource>('DataModel', datamodelId, home),
    ctx.catalog.get<ConnectorResource>('Connector', targetId, home),
  ]);
  if (!datamodel || !target) throw notFound('Data model or connector not found');
  return { datamodel, target };
}

export async function loadSubscription(ctx: GatewayContext, p: Principal, id: string) {
  const row = await repo.findSubscription(ctx.db, id);
  if (!row) throw notFound('Subscription not found');
  await requireTeam(ctx.db, p, row.team_id as string, 'member');
  return row;
}

async function current(ctx: GatewayContext, id: string): Promise<SubscriptionResource> {
  const s = await ctx.catalog.get<SubscriptionResource>('Subscription', id);
  if (!s) throw notFound('Subscription not found');
  return s;
}

export async function getSubscription(
  ctx: GatewayContext,
  p: Principal,
  id: string,
): Promise<SubscriptionRead> {
  return readOf(ctx, await loadSubscription(ctx, p, id));
}

const readOf = (ctx: GatewayContext, row: repo.SubscriptionRecord, now = new Date()) =>
  toSubscriptionRead(row, autoBackfillView(row, ctx.config.backfills.autoMaxAgeMs, now));

export async function listSubscriptions(ctx: GatewayContext, p: Principal, q: SubscriptionListQuery) {
  if (q.team_id) await requireTeam(ctx.db, p, q.team_id, 'member');
  const { rows, total } = await repo.listSubscriptions(ctx.db, p, q, offsetOf(q.page, q.size), q.size);
  const now = new Date();
  return pageOf(
    rows.map((row) => readOf(ctx, row, now)),
    total,
    q.page,
    q.size,
  );
}

export async function createSubscription(ctx: GatewayContext, p: Principal, body: SubscriptionCreate) {
  const ends = await resolveEnds(ctx, p, body.datamodel_id, body.target_connector_id, ['body']);
  const plan = await planSubscription(ctx, ends, body, ['body']);
  await ctx.catalog.runSteps(plan.steps);
  return getSubscription(ctx, p, plan.object.metadata.name);
}

/** Every (data model, target) pair in one go: validated first, written all or nothing. */
export async function subscribeAll(ctx: GatewayContext, p: Principal, body: SubscribeAll) {
  const plans = [];
  for (const [i, datamodelId] of body.datamodel_ids.entries()) {
    for (const [j, targetId] of body.target_connector_ids.entries()) {
      const ends = await resolveEnds(ctx, p, datamodelId, targetId, ['body']).catch((err: unknown) => {
        // Locate the failing pair's ids in the request lists: each issue at
        // the list entry it names, with its own message.
        if (err instanceof HttpError && err.status === 422 && Array.isArray(err.detail)) {
          const at: Record<string, (string | number)[]> = {
            datamodel_id: ['body', 'datamodel_ids', i],
            target_connector_id: ['body', 'target_connector_ids', j],
          };
          throw unprocessable(
            (err.detail as ValidationIssue[]).map((issue) => {
              const list = at[String(issue.loc[1])];
              return { ...issue, loc: list ? [...list, ...issue.loc.slice(2)] : issue.loc };
            }),
          );
        }
        throw err;
      });
      const { mapper_config, backfill, enabled } = body;
      plans.push(await planSubscription(ctx, ends, { mapper_config, backfill, enabled }, ['body']));
    }
  }
  await ctx.catalog.runSteps(plans.flatMap((plan) => plan.steps));
  const out: SubscriptionRead[] = [];
  for (const plan of plans) out.push(await getSubscription(ctx, p, plan.object.metadata.name));
  return out;
}

/** Plans a change of a subscription (also used by pipelines); nothing is written. */
export async function planSubscriptionUpdate(
  ctx: GatewayContext,
  before: SubscriptionResource,
  target: ConnectorResource,
  body: SubscriptionFields,
  loc: Loc,
  /** A pipeline switching a side points its subscription at another data model. */
  datamodel?: DataModelResource,
): Promise<Step[]> {
  const id = before.metadata.name;
  const secretName = managedSecretName('subscription', id);
  const given = mapperOf(body, loc);
  const steps: Step[] = [];
  let mapperConfig = before.spec.mapperConfig;
  if (given !== undefined) {
    const { prepared, issues } = await prepareMapper(
      ctx,
      given,
      before.spec.mapperConfig,
      secretName,
      [...loc, 'mapper_config'],
      target.spec.teamId,
    );
    issues.push(...primaryKeyIssues(target, given, loc));
    if (issues.length > 0) throw unprocessable(issues);
    mapperConfig = prepared.rules;
    const secret = await secretStep(ctx, secretName, prepared.data, []);
    if (secret) steps.push(secret);
  } else if (target.metadata.name !== before.spec.targetConnectorId) {
    const issues = primaryKeyIssues(target, mapperConfig, loc);
    if (issues.length > 0) throw unprocessable(issues);
  }
  const errorTable = await nextErrorTable(ctx, before.spec.teamId, before.spec.errorTable, body, loc);
  const spec: SubscriptionSpec = {
    ...before.spec,
    name: body.name ?? before.spec.name,
    targetTableName: body.target_table_name ?? before.spec.targetTableName,
    consumerId: body.consumer_id ?? before.spec.consumerId,
    backfill: body.backfill ?? before.spec.backfill,
    enabled: body.enabled ?? before.spec.enabled,
    mapperConfig,
    errorTable,
    datamodelId: datamodel?.metadata.name ?? before.spec.datamodelId,
    targetConnectorId: target.metadata.name,
  };
  const labels = {
    ...before.metadata.labels,
    [DATAMODEL_LABEL]: spec.datamodelId,
    [TARGET_CONNECTOR_LABEL]: spec.targetConnectorId,
  };
  steps.push(replaceStep(ctx, before, { spec, labels }));
  return steps;
}

export async function updateSubscription(
  ctx: GatewayContext,
  p: Principal,
  id: string,
  body: SubscriptionUpdate,
): Promise<SubscriptionRead> {
  await loadSubscription(ctx, p, id);
  const before = await current(ctx, id);
  const target = await ctx.catalog.get<ConnectorResource>('Connector', before.spec.targetConnectorId);
  if (!target) throw conflict('The target connector of this subscription is gone');
  await ctx.catalog.runSteps(await planSubscriptionUpdate(ctx, before, target, body, ['body']));
  // `enabled` sent is an explicit switch, as start/pause: it wins over a pipeline started before.
  if (body.enabled !== undefined) await recordSwitch(ctx, id, body.enabled);
  return getSubscription(ctx, p, id);
}

/**
 * Records an explicit switch of a subscription: the time of the call (so that
 * it wins over its pipeline's earlier start or pause, effective-state.ts) and
 * the effective state it makes, shown at once.
 */
async function recordSwitch(ctx: GatewayContext, id: string, enabled: boolean, spec = false) {
  const patched = await ctx.catalog.patch<SubscriptionResource>('Subscription', id, {
    metadata: {
      annotations: { [enabled ? RESTART_ANNOTATION : STOP_ANNOTATION]: new Date().toISOString() },
    },
    ...(spec ? { spec: { enabled } } : {}),
  });
  await ctx.catalog.patchStatus('Subscription', id, await subscriptionEffectiveStatus(ctx, patched));
}

/**
 * Start/pause: the enable switch and the time of the call, so that a pause
 * of a pipeline's subscription sticks until the pipeline or the subscription
 * is started again (effective-state.ts); the target worker restarts to apply it.
 */
export async function setEnabled(ctx: GatewayContext, p: Principal, id: string, enabled: boolean) {
  await loadSubscription(ctx, p, id);
  const before = await current(ctx, id);
  if (enabled) {
    const target = await ctx.catalog.get<ConnectorResource>('Connector', before.spec.targetConnectorId);
    if (
      target &&
      writesTables(target.spec.connectorType) &&
      !hasPrimaryKey(before.spec.mapperConfig as unknown as MapperRule[])
    ) {
      throw conflict(
        `${target.spec.connectorType} writes tables: give the mapping a primary-key rule before starting`,
      );
    }
  }
  await recordSwitch(ctx, id, enabled, true);
  return getSubscription(ctx, p, id);
}

export async function deleteSubscription(ctx: GatewayContext, p: Principal, id: string): Promise<void> {
  await loadSubscription(ctx, p, id);
  const pipeline = await repo.owningPipeline(ctx.db, id);
  if (pipeline)
    throw conflict(`The subscription belongs to pipeline "${pipeline.name}": delete the pipeline instead`);
  await deleteSubscriptionObjects(ctx, id);
}

export async function deleteSubscriptionObjects(ctx: GatewayContext, id: string): Promise<void> {
  await ctx.catalog.delete('Subscription', id);
  await ctx.secretStore.delete(ctx.config.workerNamespace, managedSecretName('subscription', id));
}
