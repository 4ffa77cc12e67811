import { isDeepStrictEqual } from 'node:util';
import {
  PIPELINE_LABEL,
  TEAM_LABEL,
  type ConnectorResource,
  type DataModelResource,
  type DataModelSpec,
  type PipelineResource,
  type PipelineSpec,
  type SubscriptionResource,
} from '@sluice/shared/catalog';
import { connectorType } from '@sluice/shared/connectors';
import { type PipelineCreate, type PipelineUpdate } from '@sluice/shared/schemas';
import { requireTeam } from '../../auth/access.js';
import type { Principal } from '../../auth/principal.js';
import { nextErrorTable } from '../../catalog/error-table.js';
import { replaceStep } from '../../catalog/secrets.js';
import type { Step } from '../../catalog/store.js';
import type { GatewayContext } from '../../context.js';
import { HttpError, unprocessable, type ValidationIssue } from '../../http/errors.js';
import { datamodelIdsOf, findConnector } from '../connectors/connectors.repository.js';
import { planConnector, planConnectorUpdate } from '../connectors/connectors.service.js';
import {
  planSubscription,
  planSubscriptionUpdate,
  type SubscriptionFields,
} from '../subscriptions/subscriptions.service.js';

// Planning of pipeline writes (spec 2.6, 4.4): everything is validated and
// decided before the first object is written; the service runs the steps
// (all or nothing, store.ts) and cleans up afterwards.

type Side = 'source' | 'target';
type Flat = Omit<PipelineUpdate, 'name' | 'team_id'>;
const FIELDS = {
  source: {
    existing: 'existing_source_id',
    name: 'source_name',
    type: 'source_type',
    config: 'source_config',
  },
  target: {
    existing: 'existing_target_id',
    name: 'target_name',
    type: 'target_type',
    config: 'target_config',
  },
} as const;

interface SideRequest {
  existing?: string;
  name?: string;
  type?: string;
  config?: Record<string, unknown>;
  /** Some field of the trio was sent (even null). */
  trioTouched: boolean;
  /** Some field of the trio has a value. */
  trioGiven: boolean;
}

function sideOf(body: Flat, side: Side): SideRequest {
  const f = FIELDS[side];
  const trio = [body[f.name], body[f.type], body[f.config]];
  return {
    existing: body[f.existing] ?? undefined,
    name: body[f.name] ?? undefined,
    type: body[f.type] ?? undefined,
    config: body[f.config] ?? undefined,
    trioTouched: trio.some((v) => v !== undefined),
    trioGiven: trio.some((v) => v !== undefined && v !== null),
  };
}

/** One side after planning: the connector (planned or current) and what it takes to get there. */
interface ResolvedSide {
  connector: ConnectorResource;
  owns: boolean;
  steps: Step[];
  /** Data models that will exist for a source (current and planned). */
  datamodels?: DataModelResource[];
}

/** 422s raised by the services, relocated to the pipeline body's field names. */
async function relocated<T>(rename: Record<string, string>, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof HttpError && err.status === 422 && Array.isArray(err.detail)) {
      const issues = (err.detail as ValidationIssue[]).map((i) => {
        const [first, field, ...rest] = i.loc;
        const to = typeof field === 'string' ? rename[field] : undefined;
        return first === 'body' && to ? { ...i, loc: ['body', to, ...rest] } : i;
      });
      throw unprocessable(issues);
    }
    throw err;
  }
}

/** An existing connector as a side of a pipeline of `namespace` (references stay within one). */
async function existingSide(
  ctx: GatewayContext,
  p: Principal,
  teamId: string,
  side: Side,
  id: string,
  namespace: string,
): Promise<ResolvedSide> {
  const loc = ['body', FIELDS[side].existing];
  const row = await findConnector(ctx.db, id);
  if (!row) throw unprocessable([{ loc, msg: 'No such connector', type: 'value_error' }]);
  await requireTeam(ctx.db, p, row.team_id as string, 'member');
  const issues: ValidationIssue[] = [];
  if (row.team_id !== teamId)
    issues.push({ loc, msg: 'The connector belongs to another team', type: 'value_error' });
  if (row.direction !== side) issues.push({ loc, msg: `Not a ${side} connector`, type: 'value_error' });
  const elsewhere = ctx.catalog.referenceIssue('Connector', row.namespace, namespace, loc);
  if (elsewhere) issues.push(elsewhere);
  if (issues.length > 0) throw unprocessable(issues);
  const connector = await ctx.catalog.get<ConnectorResource>('Connector', id, namespace);
  if (!connector) throw unprocessable([{ loc, msg: 'No such connector', type: 'value_error' }]);
  return {
    connector,
    owns: false,
    steps: [],
    datamodels: side === 'source' ? await datamodelsOf(ctx, id) : [],
  };
}

async function datamodelsOf(ctx: GatewayContext, connectorId: string): Promise<DataModelResource[]> {
  const ids = (await datamodelIdsOf(ctx.db, [connectorId])).get(connectorId) ?? [];
  const out: DataModelResource[] = [];
  for (const id of ids) {
    const dm = await ctx.catalog.get<DataModelResource>('DataModel', id);
    if (dm) out.push(dm);
  }
  return out;
}

/** A new connector as a side of a pipeline of `namespace`, created there. */
async function newSide(
  ctx: GatewayContext,
  p: Principal,
  teamId: string,
  side: Side,
  req: SideRequest,
  namespace: string,
): Promise<ResolvedSide> {
  const f = FIELDS[side];
  const issues: ValidationIssue[] = [];
  for (const [key, value] of [
    [f.name, req.name],
    [f.type, req.type],
    [f.config, req.config],
  ] as const) {
    if (value === undefined) {
      issues.push({
        loc: ['body', key],
        msg: `Field required to create the ${side} connector`,
        type: 'missing',
      });
    }
  }
  if (req.type && connectorType(req.type)?.direction !== side) {
    issues.push({ loc: ['body', f.type], msg: `Not a ${side} connector type`, type: 'value_error' });
  }
  if (issues.length > 0) throw unprocessable(issues);
  const plan = await planConnector(
    ctx,
    p,
    { name: req.name!, connector_type: req.type! as never, json_configuration: req.config!, team_id: teamId },
    ['body', f.config],
    namespace,
  );
  return { connector: plan.connector, owns: true, steps: plan.steps, datamodels: plan.datamodels };
}

function exclusive(side: Side, req: SideRequest): void {
  if (req.existing && req.trioGiven) {
    const f = FIELDS[side];
    throw unprocessable([
      {
        loc: ['body', f.existing],
        msg: `Give either ${f.existing} or ${f.name}/${f.type}/${f.config}, not both`,
        type: 'value_error',
      },
    ]);
  }
}

/** The data model a pipeline delivers: the entry named by datamodel_source_topic, else the first. */
function chooseDatamodel(
  source: ResolvedSide,
  entry: string | undefined,
  fallback?: string,
): DataModelResource {
  const all = source.datamodels ?? [];
  const wanted = entry ?? fallback;
  const dm = wanted === undefined ? all[0] : all.find((d) => d.spec.entry === wanted);
  if (!dm) {
    throw unprocessable([
      {
        loc: ['body', 'datamodel_source_topic'],
        msg:
          all.length === 0
            ? 'The source captures nothing: give it a table or topic'
            : `Not in the capture list of the source (${all.map((d) => d.spec.entry).join(', ')})`,
        type: 'value_error',
      },
    ]);
  }
  return dm;
}

/** datamodel_* fields → the data model's spec (planned objects are changed in place, before they are created). */
async function datamodelChange(
  ctx: GatewayContext,
  dm: DataModelResource,
  planned: boolean,
  body: Flat,
): Promise<Step[]> {
  const touched = [
    body.datamodel_target_topic,
    body.datamodel_error_table_enabled,
    body.datamodel_error_table_name,
    body.datamodel_error_table_target_id,
  ].some((v) => v !== undefined);
  if (!touched) return [];
  const errorTable = await nextErrorTable(
    ctx,
    dm.spec.teamId,
    dm.spec.errorTable,
    {
      error_table_enabled: body.datamodel_error_table_enabled ?? undefined,
      error_table_name: body.datamodel_error_table_name,
      error_table_target_id: body.datamodel_error_table_target_id,
    },
    ['body'],
    'datamodel_error_table_',
  );
  const spec: DataModelSpec = { ...dm.spec, errorTable };
  if (body.datamodel_target_topic !== undefined) {
    if (body.datamodel_target_topic === null) delete spec.targetTopic;
    else spec.targetTopic = body.datamodel_target_topic;
  }
  if (planned) {
    dm.spec = spec;
    return [];
  }
  return [replaceStep(ctx, dm, { spec })];
}

/** subscription_* fields in the subscription service's names. */
function subscriptionFields(body: Flat): SubscriptionFields {
  const out: SubscriptionFields = {};
  if (body.subscription_target_table_name != null)
    out.target_table_name = body.subscription_target_table_name;
  if (body.subscription_backfill != null) out.backfill = body.subscription_backfill;
  if (body.subscription_mapper_config != null) out.mapper_config = body.subscription_mapper_config;
  if (body.subscription_consumer_id != null) out.consumer_id = body.subscription_consumer_id;
  if (body.subscription_error_table_enabled != null)
    out.error_table_enabled = body.subscription_error_table_enabled;
  if (body.subscription_error_table_name !== undefined)
    out.error_table_name = body.subscription_error_table_name;
  if (body.subscription_error_table_target_id !== undefined) {
    out.error_table_target_id = body.subscription_error_table_target_id;
  }
  return out;
}
const SUBSCRIPTION_LOCS = {
  mapper_config: 'subscription_mapper_config',
  target_table_name: 'subscription_target_table_name',
  consumer_id: 'subscription_consumer_id',
  error_table_name: 'subscription_error_table_name',
  error_table_target_id: 'subscription_error_table_target_id',
  smt_config: 'subscription_mapper_config',
};

export interface CreatePlan {
  pipeline: PipelineResource;
  steps: Step[];
}

/** A new pipeline (flattened shape; the nested one is mapped to it by the service). */
export async function planCreate(
  ctx: GatewayContext,
  p: Principal,
  body: PipelineCreate,
  extra: { smtName?: string; draftStep?: string } = {},
): Promise<CreatePlan> {
  const teamId = body.team_id;
  const source = sideOf(body, 'source');
  const target = sideOf(body, 'target');
  exclusive('source', source);
  exclusive('target', target);
  // Pipelines are created in the release namespace, with their new parts.
  const ns = ctx.catalog.namespace;
  const resolve = (side: Side, req: SideRequest) =>
    req.existing
      ? existingSide(ctx, p, teamId, side, req.existing, ns)
      : newSide(ctx, p, teamId, side, req, ns);
  const src = await resolve('source', source);
  const tgt = await resolve('target', target);
  const datamodel = chooseDatamodel(src, body.datamodel_source_topic ?? undefined);
  const plannedDm = src.owns;
  const dmSteps = await datamodelChange(ctx, datamodel, plannedDm, body);
  const sub = await relocated(SUBSCRIPTION_LOCS, () =>
    planSubscription(ctx, { datamodel, target: tgt.connector }, subscriptionFields(body), ['body']),
  );
  const spec: PipelineSpec = {
    name: body.name,
    teamId,
    sourceConnectorId: src.connector.metadata.name,
    targetConnectorId: tgt.connector.metadata.name,
    datamodelId: datamodel.metadata.name,
    subscriptionId: sub.object.metadata.name,
    ownsSource: src.owns,
    ownsTarget: tgt.owns,
    desiredState: 'draft',
    version: 1,
    ...(extra.smtName ? { smtName: extra.smtName } : {}),
    ...(extra.draftStep ? { draftStep: extra.draftStep } : {}),
  };
  const pipeline = ctx.catalog.object('Pipeline', spec, { [TEAM_LABEL]: teamId }) as PipelineResource;
  pipeline.metadata.labels = { ...pipeline.metadata.labels, [PIPELINE_LABEL]: pipeline.metadata.name };
  return {
    pipeline,
    steps: [...src.steps, ...tgt.steps, ...dmSteps, ...sub.steps, ctx.catalog.createStep(pipeline)],
  };
}

export interface UpdatePlan {
  steps: Step[];
  spec: PipelineSpec;
  /** Connectors the pipeline created and no longer uses: deleted after the write if nothing else uses them. */
  orphans: string[];
}

export interface PipelineObjects {
  pipeline: PipelineResource;
  source: ConnectorResource;
  target: ConnectorResource;
  datamodel: DataModelResource;
  subscription: SubscriptionResource;
}

/** A change of a pipeline (spec 4.4 update patterns), or an import of its configuration. */
export async function planUpdate(
  ctx: GatewayContext,
  p: Principal,
  current: PipelineObjects,
  body: Flat & { name?: string },
): Promise<UpdatePlan> {
  const spec = current.pipeline.spec;
  const teamId = spec.teamId;
  // A pipeline applied in another watched namespace is changed there, its new parts too.
  const ns = current.pipeline.metadata.namespace;
  const steps: Step[] = [];
  const orphans: string[] = [];

  const side = async (which: Side): Promise<ResolvedSide> => {
    const req = sideOf(body, which);
    exclusive(which, req);
    const connector = which === 'source' ? current.source : current.target;
    const owns = which === 'source' ? spec.ownsSource : spec.ownsTarget;
    const keep: ResolvedSide = {
      connector,
      owns,
      steps: [],
      datamodels: which === 'source' ? await datamodelsOf(ctx, connector.metadata.name) : [],
    };
    let next = keep;
    if (req.existing && req.existing !== connector.metadata.name) {
      next = await existingSide(ctx, p, teamId, which, req.existing, ns);
    } else if (req.trioGiven) {
      const sameType = req.type === undefined || req.type === connector.spec.connectorType;
      if (owns && sameType) {
        const plan = await planConnectorUpdate(
          ctx,
          connector,
          { name: req.name, json_configuration: req.config },
          ['body', FIELDS[which].config],
        );
        next = {
          connector: plan.connector,
          owns: true,
          steps: plan.steps,
          datamodels: [...(keep.datamodels ?? []), ...plan.datamodels],
        };
      } else {
        next = await newSide(ctx, p, teamId, which, req, ns);
      }
    }
    if (next.connector.metadata.name !== connector.metadata.name && owns)
      orphans.push(connector.metadata.name);
    return next;
  };

  const src = await side('source');
  const tgt = await side('target');
  steps.push(...src.steps, ...tgt.steps);
  const sourceChanged = src.connector.metadata.name !== current.source.metadata.name;
  const datamodel = chooseDatamodel(
    src,
    body.datamodel_source_topic ?? undefined,
    sourceChanged ? undefined : current.datamodel.spec.entry,
  );
  const plannedDm = !(await ctx.catalog.get('DataModel', datamodel.metadata.name));
  steps.push(...(await datamodelChange(ctx, datamodel, plannedDm, body)));
  const subChange = subscriptionFields(body);
  const repointed =
    datamodel.metadata.name !== current.subscription.spec.datamodelId ||
    tgt.connector.metadata.name !== current.subscription.spec.targetConnectorId;
  if (repointed || Object.keys(subChange).length > 0) {
    steps.push(
      ...(await relocated(SUBSCRIPTION_LOCS, () =>
        planSubscriptionUpdate(ctx, current.subscription, tgt.connector, subChange, ['body'], datamodel),
      )),
    );
  }
  const next: PipelineSpec = {
    ...spec,
    name: body.name ?? spec.name,
    sourceConnectorId: src.connector.metadata.name,
    targetConnectorId: tgt.connector.metadata.name,
    datamodelId: datamodel.metadata.name,
    ownsSource: src.owns,
    ownsTarget: tgt.owns,
    version: spec.version,
  };
  // A request that changes nothing (an empty PATCH) is no new version.
  if (steps.length === 0 && isDeepStrictEqual(next, spec)) return { steps, spec, orphans };
  next.version = spec.version + 1;
  steps.push(replaceStep(ctx, current.pipeline, { spec: next }));
  return { steps, spec: next, orphans };
}
