import {
  CONNECTOR_CALLS,
  TEAM_LABEL,
  nextState,
  type ConnectorCall,
  type ConnectorResource,
  type ConnectorSpec,
  type ConnectorState,
  type DataModelResource,
  RESTART_ANNOTATION,
  STOP_ANNOTATION,
  scalesOut,
  singleReaderReason,
} from '@sluice/shared/catalog';
import {
  changedDestination,
  connectorType,
  requireConnectorType,
  secretPaths,
  validateConnectorConfig,
} from '@sluice/shared/connectors';
import {
  type ConnectorCreate,
  type ConnectorListQuery,
  type ConnectorRead,
  type ConnectorUpdate,
} from '@sluice/shared/schemas';
import { externalizeSecrets, secretSlots } from '@sluice/shared/secrets';
import { requireTeam } from '../../auth/access.js';
import type { Principal } from '../../auth/principal.js';
import { releaseForDelete } from './connectors.capture-release.js';
import {
  managedSecretName,
  missingReferences,
  replaceStep,
  secretStep,
  teamSecretScope,
} from '../../catalog/secrets.js';
import type { Step } from '../../catalog/store.js';
import type { GatewayContext } from '../../context.js';
import { conflict, invalid, notFound, unprocessable, type ValidationIssue } from '../../http/errors.js';
import { offsetOf, pageOf } from '../../http/pagination.js';
import { captureEntries, datamodelObjects } from '../datamodels/datamodels.plan.js';
import { connectorEffectiveStatus } from '../pipelines/pipelines.effective.js';
import * as repo from './connectors.repository.js';
import { toConnectorRead } from './connectors.mapper.js';

type Loc = (string | number)[];

/** What a connector write will do, decided before anything is written. */
export interface ConnectorPlan {
  connector: ConnectorResource;
  datamodels: DataModelResource[];
  steps: Step[];
}

async function read(ctx: GatewayContext, row: repo.ConnectorRecord): Promise<ConnectorRead> {
  const ids = await repo.datamodelIdsOf(ctx.db, [row.id]);
  return toConnectorRead(row, ids.get(row.id) ?? []);
}

/** The connector, if the caller may read it (404 missing, 403 not in its team). */
export async function loadConnector(
  ctx: GatewayContext,
  p: Principal,
  id: string,
): Promise<repo.ConnectorRecord> {
  const row = await repo.findConnector(ctx.db, id);
  if (!row) throw notFound('Connector not found');
  await requireTeam(ctx.db, p, row.team_id as string, 'member');
  return row;
}

/**
 * Validates a configuration for `type` and moves its inline secrets out:
 * every issue at once, located under `loc`.
 */
async function prepareConfiguration(
  ctx: GatewayContext,
  type: string,
  config: Record<string, unknown>,
  id: string,
  previous: Record<string, unknown> | null,
  loc: Loc,
  teamId: string,
) {
  const def = requireConnectorType(type);
  const fields = secretPaths(def.type);
  const secretName = managedSecretName('connector', id);
  const changed = changedDestination(def.type, previous, config);
  const ext = externalizeSecrets({
    config,
    secretFields: fields,
    previous,
    secretName,
    ...(changed ? { changedDestination: changed } : {}),
  });
  // Validate what the client meant: a `<redacted>` kept from before counts as present.
  const checked = validateConnectorConfig(def.type, ext.issues.length ? config : ext.config);
  const issues: ValidationIssue[] = [...ext.issues, ...checked].map((i) => ({
    ...i,
    loc: [...loc, ...i.loc],
  }));
  issues.push(
    ...(await missingReferences(
      ctx,
      secretSlots(ext.config, fields).map((slot) => ({ loc: [...loc, ...slot.loc], value: slot.value })),
      await teamSecretScope(ctx, [teamId], [secretName]),
    )),
  );
  if (issues.length > 0) throw unprocessable(issues);
  const stored = structuredClone(ext.config);
  // Spec 2.13: the consumer group of a Kafka source is generated when absent.
  if (def.type === 'KAFKA_SOURCE' && stored.consumer_group_id === undefined) {
    stored.consumer_group_id = `sluice-${id}`;
  }
  return { config: stored, secret: await secretStep(ctx, secretName, ext.data, ext.retained) };
}

/** A replica count other than 1 only for a target (422 at `loc` saying why not). */
function assertReplicas(type: string, replicas: number | undefined, loc: Loc): void {
  if (replicas === undefined || replicas === 1 || scalesOut(type)) return;
  throw invalid(loc, singleReaderReason(type));
}

async function assertNameFree(ctx: GatewayContext, teamId: string, name: string, except?: string) {
  const other = await repo.findConnectorByName(ctx.db, teamId, name);
  if (other && other.id !== except) throw conflict(`A connector named "${name}" already exists in this team`);
}

/**
 * Plans a new connector with its data models (also used by pipelines, with
 * their own `configLoc`, and the namespace of the pipeline it joins).
 */
export async function planConnector(
  ctx: GatewayContext,
  p: Principal,
  body: ConnectorCreate,
  configLoc: Loc = ['body', 'json_configuration'],
  namespace = ctx.catalog.namespace,
): Promise<ConnectorPlan> {
  await requireTeam(ctx.db, p, body.team_id, 'member', ['body', 'team_id']);
  await assertNameFree(ctx, body.team_id, body.name);
  const def = requireConnectorType(body.connector_type);
  assertReplicas(def.type, body.replicas, ['body', 'replicas']);
  const id = crypto.randomUUID();
  const { config, secret } = await prepareConfiguration(
    ctx,
    def.type,
    body.json_configuration,
    id,
    null,
    configLoc,
    body.team_id,
  );
  const spec: ConnectorSpec = {
    name: body.name,
    teamId: body.team_id,
    connectorType: def.type,
    configuration: config,
    desiredState: 'stopped',
    ...(body.replicas !== undefined ? { replicas: body.replicas } : {}),
  };
  const connector = ctx.catalog.object(
    'Connector',
    spec,
    { [TEAM_LABEL]: body.team_id },
    id,
    namespace,
  ) as ConnectorResource;
  const datamodels = datamodelObjects(ctx.catalog, connector, captureEntries(def.type, config));
  const steps = [
    ...(secret ? [secret] : []),
    ctx.catalog.createStep(connector),
    ...datamodels.map((d) => ctx.catalog.createStep(d)),
  ];
  return { connector, datamodels, steps };
}

export async function createConnector(ctx: GatewayContext, p: Principal, body: ConnectorCreate) {
  const plan = await planConnector(ctx, p, body);
  await ctx.catalog.runSteps(plan.steps);
  return getConnector(ctx, p, plan.connector.metadata.name);
}

export async function getConnector(ctx: GatewayContext, p: Principal, id: string): Promise<ConnectorRead> {
  return read(ctx, await loadConnector(ctx, p, id));
}

export async function findConnectorByName(ctx: GatewayContext, p: Principal, name: string, teamId?: string) {
  if (teamId) await requireTeam(ctx.db, p, teamId, 'member');
  const row = await repo.findVisibleConnectorByName(ctx.db, p, name, teamId);
  if (!row) throw notFound('Connector not found');
  return read(ctx, row);
}

export async function listConnectors(
  ctx: GatewayContext,
  p: Principal,
  q: ConnectorListQuery,
  direction?: 'source' | 'target',
) {
  if (q.team_id) await requireTeam(ctx.db, p, q.team_id, 'member');
  const { rows, total } = await repo.listConnectors(
    ctx.db,
    p,
    { ...q, direction },
    offsetOf(q.page, q.size),
    q.size,
  );
  const ids = await repo.datamodelIdsOf(
    ctx.db,
    rows.map((r) => r.id),
  );
  const items = rows.map((r) => toConnectorRead(r, ids.get(r.id) ?? []));
  return pageOf(items, total, q.page, q.size);
}

/** Spec 4.5, the five rules of a connector change. */
export async function updateConnector(
  ctx: GatewayContext,
  p: Principal,
  id: string,
  body: ConnectorUpdate,
): Promise<ConnectorRead> {
  await loadConnector(ctx, p, id);
  const current = await ctx.catalog.get<ConnectorResource>('Connector', id);
  if (!current) throw notFound('Connector not found');
  // Rule 4.
  if (body.connector_type !== undefined && body.connector_type !== current.spec.connectorType) {
    throw invalid(['body', 'connector_type'], 'connector_type cannot change after creation');
  }
  assertReplicas(current.spec.connectorType, body.replicas, ['body', 'replicas']);
  const teamId = body.team_id ?? current.spec.teamId;
  if (teamId !== current.spec.teamId) {
    await requireTeam(ctx.db, p, teamId, 'member', ['body', 'team_id']);
    const users = await repo.connectorUsers(ctx.db, id);
    if (users.subscriptions.length + users.pipelines.length > 0) {
      throw conflict('The connector is in use by subscriptions or pipelines and cannot move to another team');
    }
  }
  const plan = await planConnectorUpdate(ctx, current, { ...body, team_id: teamId }, [
    'body',
    'json_configuration',
  ]);
  await ctx.catalog.runSteps(plan.steps);
  return getConnector(ctx, p, id);
}

/**
 * Plans a change of name, team or configuration by the rules of spec 4.5 (the
 * caller checked access and the team move); nothing is written. `configLoc`
 * locates the configuration in the request. New capture-list entries become
 * new data models (`plan.datamodels`).
 */
export async function planConnectorUpdate(
  ctx: GatewayContext,
  current: ConnectorResource,
  body: {
    name?: string;
    team_id?: string;
    json_configuration?: Record<string, unknown>;
    replicas?: number;
  },
  configLoc: Loc,
): Promise<ConnectorPlan> {
  const id = current.metadata.name;
  const spec = current.spec;
  const teamId = body.team_id ?? spec.teamId;
  const name = body.name ?? spec.name;
  if (name !== spec.name || teamId !== spec.teamId) await assertNameFree(ctx, teamId, name, id);

  let configuration = spec.configuration;
  let newEntries: string[] = [];
  const steps: Step[] = [];
  if (body.json_configuration !== undefined) {
    const def = requireConnectorType(spec.connectorType);
    // Rule 1: replaced whole. Rule 2: the capture list never shrinks.
    const given = structuredClone(body.json_configuration);
    const before = captureEntries(def.type, spec.configuration);
    if (def.topics_config_key === 'whitelist') {
      // A list of the wrong type is left for validation to report.
      if (!Object.hasOwn(given, 'whitelist') || Array.isArray(given.whitelist)) {
        const asked = (given.whitelist ?? []) as unknown[];
        given.whitelist = [...before, ...asked.filter((e) => !before.includes(e as string))];
      }
      newEntries = captureEntries(def.type, given).filter((e) => !before.includes(e));
    } else if (def.topics_config_key === 'topic') {
      if (given.topic === undefined && before[0] !== undefined) given.topic = before[0];
      else if (before[0] !== undefined && given.topic !== before[0]) {
        throw invalid(
          [...configLoc, 'topic'],
          'The topic of a Kafka source cannot change: create another connector for another topic',
        );
      }
    }
    const prepared = await prepareConfiguration(
      ctx,
      def.type,
      given,
      id,
      spec.configuration,
      configLoc,
      teamId,
    );
    configuration = prepared.config;
    if (prepared.secret) steps.push(prepared.secret);
  } else if (teamId !== spec.teamId) {
    // The stored references now serve another team: it must be granted them too.
    const fields = secretPaths(spec.connectorType);
    const secretName = managedSecretName('connector', id);
    const issues = await missingReferences(
      ctx,
      secretSlots(spec.configuration, fields).map((slot) => ({
        loc: [...configLoc, ...slot.loc],
        value: slot.value,
      })),
      await teamSecretScope(ctx, [teamId], [secretName]),
    );
    if (issues.length > 0) throw unprocessable(issues);
  }
  const next: ConnectorSpec = {
    ...spec,
    name,
    teamId,
    configuration,
    ...(body.replicas !== undefined ? { replicas: body.replicas } : {}),
  };
  const labels = { ...current.metadata.labels, [TEAM_LABEL]: teamId };
  const connector = { ...current, spec: next };
  const datamodels = datamodelObjects(ctx.catalog, connector, newEntries);
  steps.push(...datamodels.map((d) => ctx.catalog.createStep(d)));
  steps.push(replaceStep(ctx, current, { spec: next, labels }));
  if (teamId !== spec.teamId) {
    for (const dmId of (await repo.datamodelIdsOf(ctx.db, [id])).get(id) ?? []) {
      const dm = await ctx.catalog.get<DataModelResource>('DataModel', dmId);
      if (dm) {
        steps.push(
          replaceStep(ctx, dm, {
            spec: { ...dm.spec, teamId },
            labels: { ...dm.metadata.labels, [TEAM_LABEL]: teamId },
          }),
        );
      }
    }
  }
  return { connector, datamodels, steps };
}

/** Refused (409) while a subscription or pipeline uses it; takes its data models and managed secret along. */
export async function deleteConnector(ctx: GatewayContext, p: Principal, id: string): Promise<void> {
  await loadConnector(ctx, p, id);
  const users = await repo.connectorUsers(ctx.db, id);
  const using = [
    ...users.pipelines.map((n) => `pipeline "${n}"`),
    ...users.subscriptions.map((n) => `subscription "${n}"`),
  ];
  if (using.length > 0) {
    throw conflict(`The connector is in use by ${using.join(', ')}: delete those first`);
  }
  await deleteConnectorObjects(ctx, id);
}

/**
 * Deletes a connector, its data models and its secret (idempotent: a retry
 * finishes a half-done delete): the API's delete, a pipeline's parts, a
 * team's deletion. A PostgreSQL source's capture is resolved before its
 * secret goes and dropped after the connector (connectors.capture-release.ts);
 * the operator's finalizer stops the worker meanwhile, and the drop waits for
 * it to let go of the slot.
 */
export async function deleteConnectorObjects(ctx: GatewayContext, id: string): Promise<void> {
  const row = await repo.findConnectorToDelete(ctx.db, id);
  // Resolved now: the secret it needs is deleted below.
  const releaseCapture = row ? await releaseForDelete(ctx, row) : async () => undefined;
  for (const dmId of (await repo.datamodelIdsOf(ctx.db, [id])).get(id) ?? []) {
    await ctx.catalog.delete('DataModel', dmId);
  }
  await ctx.catalog.delete('Connector', id);
  await ctx.secretStore.delete(ctx.config.workerNamespace, managedSecretName('connector', id));
  await releaseCapture();
}

/**
 * Start/stop (spec 3.2): records the desired state, the time of the call
 * (so that a stop of a pipeline's connector sticks and a start wins over its
 * pipeline's pause, effective-state.ts) and the accepted move; the operator
 * converges.
 */
export async function runConnector(
  ctx: GatewayContext,
  p: Principal,
  id: string,
  call: ConnectorCall,
): Promise<string> {
  const row = await loadConnector(ctx, p, id);
  const state = row.state as ConnectorState;
  const to = nextState(CONNECTOR_CALLS[call], state);
  if (!to) throw conflict(`The connector is ${state}: ${call} is not allowed in this state`);
  const patched = await ctx.catalog.patch<ConnectorResource>('Connector', id, {
    // A start always restarts the worker(s), so a retry from error really retries.
    metadata: {
      annotations: { [call === 'start' ? RESTART_ANNOTATION : STOP_ANNOTATION]: new Date().toISOString() },
    },
    spec: { desiredState: call === 'start' ? 'running' : 'stopped' },
  });
  // The latest call wins over any pipeline's, so the effective state is the call's now.
  await ctx.catalog.patchStatus('Connector', id, {
    state: to,
    message: null,
    ...(await connectorEffectiveStatus(ctx, patched)),
  });
  return to.toUpperCase();
}

/**
 * A source (or target) connector for a worker-config call. A connector of the
 * other direction has no such worker, so the resource the path names does not
 * exist: 404, as for an unknown id.
 */
export async function loadDirected(
  ctx: GatewayContext,
  p: Principal,
  id: string,
  direction: 'source' | 'target',
) {
  const row = await loadConnector(ctx, p, id);
  if (connectorType(row.connector_type)?.direction !== direction) {
    throw notFound(`The connector is not a ${direction} connector: it has no ${direction} worker`);
  }
  return row;
}
