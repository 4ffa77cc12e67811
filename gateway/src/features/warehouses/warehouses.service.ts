import { isDeepStrictEqual } from 'node:util';
import { TEAM_LABEL, type WarehouseResource, type WarehouseSpec } from '@sluice/shared/catalog';
import { WAREHOUSE_DESTINATION_FIELDS, type SecretValue } from '@sluice/shared/connectors';
import {
  DatabricksApiError,
  checkUnityName,
  normalizeHostname,
  normalizeHttpPath,
  runStatement,
  warehouseIdOf,
  type ConnectionStep,
  type ConnectionVerdict,
} from '@sluice/shared/databricks';
import { OutboundRequestError } from '@sluice/shared/net';
import { SecretNotFoundError } from '@sluice/shared/ports';
import {
  REDACTED,
  type StatementResult,
  type StatementSubmit,
  type WarehouseCreate,
  type WarehouseListQuery,
  type WarehouseRead,
  type WarehouseUpdate,
} from '@sluice/shared/schemas';
import { externalizeSecrets } from '@sluice/shared/secrets';
import { runWarehouseTest, warehouseTestStatus } from '@sluice/shared/warehouses';
import { requireTeam } from '../../auth/access.js';
import type { Principal } from '../../auth/principal.js';
import {
  managedSecretName,
  missingReferences,
  replaceStep,
  secretStep,
  teamSecretScope,
} from '../../catalog/secrets.js';
import type { Step } from '../../catalog/store.js';
import type { GatewayContext } from '../../context.js';
import { conflict, HttpError, notFound, unprocessable, type ValidationIssue } from '../../http/errors.js';
import { offsetOf, pageOf } from '../../http/pagination.js';
import { deleteTasksOf } from '../warehouse-tasks/warehouse-tasks.repository.js';
import { engineClient, resolveToken, tokenSource } from './warehouses.engine.js';
import * as repo from './warehouses.repository.js';
import { TOKEN_FIELD, toWarehouseRead } from './warehouses.mapper.js';

// Warehouses (spec 2.12, 3.3): team-owned, credentialed connections to a
// Databricks SQL warehouse. The Warehouse custom resource is the source of
// truth (written through the catalog store, mirrored for reads); the token
// lives in the managed secret `sluice-warehouse-<id>`. No worker is started
// for a warehouse: the gateway talks to the engine itself, for the
// connection test, relayed statements and scheduled tasks.

type Loc = (string | number)[];
const BODY = (field: string): Loc => ['body', field];

/** The warehouse, if the caller may read it (404 missing, 403 not in its team). */
export async function loadWarehouse(
  ctx: GatewayContext,
  p: Principal,
  id: string,
): Promise<repo.WarehouseRecord> {
  const row = await repo.findWarehouse(ctx.db, id);
  if (!row) throw notFound('Warehouse not found');
  await requireTeam(ctx.db, p, row.team_id as string, 'member');
  return row;
}

/** The object in the cluster (the mirror may lag a moment behind a write of someone else). */
async function current(ctx: GatewayContext, id: string): Promise<WarehouseResource> {
  const w = await ctx.catalog.get<WarehouseResource>('Warehouse', id);
  if (!w) throw notFound('Warehouse not found');
  return w;
}

async function assertNameFree(ctx: GatewayContext, teamId: string, name: string, except?: string) {
  const other = await repo.findWarehouseByName(ctx.db, teamId, name);
  if (other && other.id !== except) throw conflict(`A warehouse named "${name}" already exists in this team`);
}

interface SettingsInput {
  server_hostname?: string;
  http_path?: string;
  catalog?: string | null;
  schema?: string | null;
}
type Settings = Pick<WarehouseSpec, 'serverHostname' | 'httpPath' | 'catalog' | 'schema'>;

/**
 * Spec 2.12's rules for the connection settings: `given` over `base`
 * (undefined keeps, null clears catalog or schema). Every issue at once.
 */
function checkSettings(
  given: SettingsInput,
  base: Settings,
): { settings: Settings; issues: ValidationIssue[] } {
  const issues: ValidationIssue[] = [];
  const settings: Settings = { serverHostname: base.serverHostname, httpPath: base.httpPath };
  if (base.catalog !== undefined) settings.catalog = base.catalog;
  if (base.schema !== undefined) settings.schema = base.schema;
  if (given.server_hostname !== undefined) {
    const host = normalizeHostname(given.server_hostname);
    if (host.ok) settings.serverHostname = host.value;
    else issues.push({ loc: BODY('server_hostname'), msg: host.msg, type: 'value_error' });
  }
  if (given.http_path !== undefined) {
    const id = warehouseIdOf(given.http_path);
    if (id.ok) settings.httpPath = normalizeHttpPath(given.http_path);
    else issues.push({ loc: BODY('http_path'), msg: id.msg, type: 'value_error' });
  }
  for (const field of ['catalog', 'schema'] as const) {
    const value = given[field];
    if (value === null) delete settings[field];
    else if (value !== undefined) {
      const name = checkUnityName(value, field);
      if (name.ok) settings[field] = name.value;
      else issues.push({ loc: BODY(field), msg: name.msg, type: 'string_pattern_mismatch' });
    }
  }
  if (settings.schema !== undefined && settings.catalog === undefined) {
    issues.push({ loc: BODY('schema'), msg: 'A default schema needs a catalog', type: 'value_error' });
  }
  return { settings, issues };
}

/** The token of a write: what to store (a reference) and the secret step that goes with it. */
async function prepareToken(
  ctx: GatewayContext,
  id: string,
  value: SecretValue,
  previous: unknown,
  teamId: string,
  changedDestination?: string,
): Promise<{ ref: unknown; issues: ValidationIssue[]; step?: Step }> {
  const secretName = managedSecretName('warehouse', id);
  const ext = externalizeSecrets({
    config: { [TOKEN_FIELD]: value },
    secretFields: [TOKEN_FIELD],
    previous: previous === undefined ? null : { [TOKEN_FIELD]: previous },
    secretName,
    ...(changedDestination ? { changedDestination } : {}),
  });
  const issues: ValidationIssue[] = ext.issues.map((i) => ({ ...i, loc: ['body', ...i.loc] }));
  if (issues.length > 0) return { ref: undefined, issues };
  const scope = await teamSecretScope(ctx, [teamId], [secretName]);
  issues.push(
    ...(await missingReferences(ctx, [{ loc: BODY(TOKEN_FIELD), value: ext.config[TOKEN_FIELD] }], scope)),
  );
  if (issues.length > 0) return { ref: undefined, issues };
  return {
    ref: ext.config[TOKEN_FIELD],
    issues,
    step: await secretStep(ctx, secretName, ext.data, ext.retained),
  };
}

export async function createWarehouse(ctx: GatewayContext, p: Principal, body: WarehouseCreate) {
  await requireTeam(ctx.db, p, body.team_id, 'member', ['body', 'team_id']);
  const id = crypto.randomUUID();
  const { settings, issues } = checkSettings(body, { serverHostname: '', httpPath: '' });
  const token = await prepareToken(ctx, id, body.access_token as SecretValue, undefined, body.team_id);
  issues.push(...token.issues);
  if (issues.length > 0) throw unprocessable(issues);
  await assertNameFree(ctx, body.team_id, body.name);
  const spec: WarehouseSpec = {
    name: body.name,
    teamId: body.team_id,
    ...settings,
    accessToken: token.ref as WarehouseSpec['accessToken'],
  };
  const object = ctx.catalog.object('Warehouse', spec, { [TEAM_LABEL]: body.team_id }, id);
  await ctx.catalog.runSteps([...(token.step ? [token.step] : []), ctx.catalog.createStep(object)]);
  return getWarehouse(ctx, p, id);
}

export async function getWarehouse(ctx: GatewayContext, p: Principal, id: string): Promise<WarehouseRead> {
  return toWarehouseRead(await loadWarehouse(ctx, p, id));
}

export async function listWarehouses(ctx: GatewayContext, p: Principal, q: WarehouseListQuery) {
  if (q.team_id) await requireTeam(ctx.db, p, q.team_id, 'member');
  const { rows, total } = await repo.listWarehouses(ctx.db, p, q, offsetOf(q.page, q.size), q.size);
  return pageOf(rows.map(toWarehouseRead), total, q.page, q.size);
}

/** The test of `spec`'s settings with `token` (or the stored one); a missing token secret fails step 1. */
async function runTest(
  ctx: GatewayContext,
  objectId: string,
  spec: WarehouseSpec,
  token?: string,
): Promise<ConnectionVerdict> {
  return runWarehouseTest(spec, ctx.warehouseHttp, token ?? (await tokenSource(ctx, objectId, spec)));
}

/** Spec 3.3: the verdict becomes the status, as the operator writes it (warehouseTestStatus). */
async function recordVerdict(ctx: GatewayContext, w: WarehouseResource, verdict: ConnectionVerdict) {
  const status = warehouseTestStatus(verdict, w, new Date().toISOString());
  await ctx.catalog.patchStatus('Warehouse', w.metadata.name, status);
}

/** POST /warehouses/{id}/test: the three calls with the stored settings; the verdict becomes the status. */
export async function testWarehouse(ctx: GatewayContext, p: Principal, id: string): Promise<WarehouseRead> {
  await loadWarehouse(ctx, p, id);
  const w = await current(ctx, id);
  await recordVerdict(ctx, w, await runTest(ctx, w.metadata.name, w.spec));
  return getWarehouse(ctx, p, id);
}

/** Where a failed test of a change points: the setting the failing step reads. */
function failureLoc(step: ConnectionStep, body: WarehouseUpdate): Loc {
  if (step !== 'warehouse') return BODY(step);
  const changed = (['server_hostname', 'http_path', TOKEN_FIELD] as const).find((f) => body[f] !== undefined);
  return changed ? BODY(changed) : ['body'];
}

/**
 * Spec 2.12: a rename or a team move is saved as is; a change of hostname,
 * HTTP path, token, catalog or schema is tested first (with the new values)
 * and written only if the engine accepts it — otherwise a 422 with the
 * engine's message, and nothing changes.
 */
export async function updateWarehouse(
  ctx: GatewayContext,
  p: Principal,
  id: string,
  body: WarehouseUpdate,
): Promise<WarehouseRead> {
  await loadWarehouse(ctx, p, id);
  const w = await current(ctx, id);
  const spec = w.spec;
  const teamId = body.team_id ?? spec.teamId;
  if (teamId !== spec.teamId) await requireTeam(ctx.db, p, teamId, 'member', ['body', 'team_id']);
  const name = body.name ?? spec.name;

  const { settings, issues } = checkSettings(body, spec);
  let token: Awaited<ReturnType<typeof prepareToken>> | undefined;
  // The token goes where the hostname says: a new hostname needs it again.
  const moved = WAREHOUSE_DESTINATION_FIELDS.find((f) => settings[f.setting] !== spec[f.setting])?.field;
  if (body.access_token !== undefined) {
    token = await prepareToken(ctx, id, body.access_token as SecretValue, spec.accessToken, teamId, moved);
    issues.push(...token.issues);
  } else if (moved) {
    issues.push({
      loc: BODY(TOKEN_FIELD),
      msg: `${TOKEN_FIELD} is required again because ${moved} changed (send the token or a valueFrom reference)`,
      type: 'missing',
    });
  } else if (teamId !== spec.teamId) {
    // The stored reference now serves another team: it must be granted it too.
    const secretName = managedSecretName('warehouse', id);
    const scope = await teamSecretScope(ctx, [teamId], [secretName]);
    issues.push(
      ...(await missingReferences(ctx, [{ loc: BODY(TOKEN_FIELD), value: spec.accessToken }], scope)),
    );
  }
  if (issues.length > 0) throw unprocessable(issues);
  if (name !== spec.name || teamId !== spec.teamId) await assertNameFree(ctx, teamId, name, id);

  const next: WarehouseSpec = {
    name,
    teamId,
    ...settings,
    accessToken: (token?.ref ?? spec.accessToken) as WarehouseSpec['accessToken'],
  };
  const newToken = typeof body.access_token === 'string' && body.access_token !== REDACTED;
  const tokenChanged = newToken || !isDeepStrictEqual(next.accessToken, spec.accessToken);
  const connectionChanged =
    tokenChanged ||
    (['serverHostname', 'httpPath', 'catalog', 'schema'] as const).some((k) => next[k] !== spec[k]);

  let verdict: ConnectionVerdict | undefined;
  if (connectionChanged) {
    // The stored token is only used when the change did not bring one.
    verdict = await runTest(ctx, id, next, newToken ? (body.access_token as string) : undefined);
    if (!verdict.ok) {
      throw unprocessable([
        { loc: failureLoc(verdict.step, body), msg: verdict.message, type: 'connection_test_failed' },
      ]);
    }
  }
  let updated: WarehouseResource | undefined;
  const steps: Step[] = [];
  if (token?.step) steps.push(token.step);
  steps.push(
    replaceStep(ctx, w, { spec: next, labels: { ...w.metadata.labels, [TEAM_LABEL]: teamId } }, (u) => {
      updated = u;
    }),
  );
  await ctx.catalog.runSteps(steps);
  if (verdict && updated) await recordVerdict(ctx, updated, verdict);
  return getWarehouse(ctx, p, id);
}

export async function deleteWarehouse(ctx: GatewayContext, p: Principal, id: string): Promise<void> {
  await loadWarehouse(ctx, p, id);
  await deleteWarehouseObjects(ctx, id);
}

/** Deletes the warehouse, its tasks (with their runs) and its managed secret (the API's delete, a team's deletion). */
export async function deleteWarehouseObjects(ctx: GatewayContext, id: string): Promise<void> {
  await deleteTasksOf(ctx.db, id);
  await ctx.catalog.delete('Warehouse', id);
  await ctx.secretStore.delete(ctx.config.workerNamespace, managedSecretName('warehouse', id));
}

/** The engine refused or could not be reached: a 502 with its words. */
export const engineError = (err: unknown): HttpError | undefined =>
  err instanceof DatabricksApiError
    ? new HttpError(502, `The warehouse engine answered ${err.status} ${err.errorCode}: ${err.message}`)
    : err instanceof OutboundRequestError
      ? new HttpError(502, `The warehouse engine could not be reached: ${err.message}`)
      : undefined;

/**
 * Relays one statement (spec 2.12: it runs on the owner's compute) and
 * returns its state and rows; nothing of the result is stored.
 */
export async function submitStatement(
  ctx: GatewayContext,
  p: Principal,
  id: string,
  body: StatementSubmit,
): Promise<StatementResult> {
  await loadWarehouse(ctx, p, id);
  const { spec } = await current(ctx, id);
  const limits = ctx.config.warehouses;
  let token: string;
  try {
    token = await resolveToken(ctx, id, spec);
  } catch (err) {
    if (err instanceof SecretNotFoundError) throw conflict(`The access token cannot be read: ${err.message}`);
    throw err;
  }
  const warehouseId = warehouseIdOf(spec.httpPath);
  if (!warehouseId.ok) throw conflict(`The warehouse's HTTP path is not usable: ${warehouseId.msg}`);
  try {
    const out = await runStatement(engineClient(ctx, spec.serverHostname, token), {
      statement: body.statement,
      warehouseId: warehouseId.value,
      ...(spec.catalog !== undefined ? { catalog: spec.catalog } : {}),
      ...(spec.schema !== undefined ? { schema: spec.schema } : {}),
      rowLimit: Math.min(body.row_limit ?? limits.rowLimit, limits.rowLimit),
      timeoutMs: Math.min(body.timeout_s ?? limits.statementTimeoutS, limits.statementTimeoutS) * 1000,
    });
    return {
      statement_id: out.statementId,
      state: out.state,
      timed_out: out.timedOut,
      error: out.error && { code: out.error.code, message: out.error.message, sql_state: out.error.sqlState },
      columns: out.columns,
      rows: out.rows,
      row_count: out.rows.length,
      truncated: out.truncated,
    };
  } catch (err) {
    throw engineError(err) ?? err;
  }
}
