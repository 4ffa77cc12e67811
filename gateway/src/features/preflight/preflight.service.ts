import { type ConnectorSpec } from '@sluice/shared/catalog';
import {
  validateConnectorConfig,
  withConnectorDefaults,
  type ConnectorTypeDef,
  type PreflightAction,
} from '@sluice/shared/connectors';
import { managedSecretName } from '@sluice/shared/ports';
import { isUuid, REDACTED } from '@sluice/shared/schemas';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import { callerSecretScope, teamSecretScope } from '../../catalog/secrets.js';
import { CONNECTION_TIMEOUT_MS, outboundPolicy } from '../../connections/outbound.js';
import { resolveSecretFields, type StoredConnector } from '../../connections/stored-configuration.js';
import { badRequest, HttpError, invalid, unprocessable, type ValidationIssue } from '../../http/errors.js';
import { loadConnector } from '../connectors/connectors.service.js';
import { loadDataModel } from '../datamodels/datamodels.service.js';
import {
  SystemFailure,
  checkKafka,
  fetchKafkaMessages,
  listKafkaTopics,
  checkMysql,
  fetchMysqlSchema,
  listMysqlTables,
  checkOracle,
  checkPostgres,
  fetchPostgresSchema,
  listPostgresTables,
  checkWebhook,
} from '@sluice/dataplane';

// Pre-flight checks (spec 4.5): a configuration is tried against the real
// system before it is saved. docs/data-plane.md, "Pre-flight checks", is the
// user-facing description; the decisions:
//
// - check-credentials answers 200 `{ok, message}` whenever the check ran: a
//   refused password is the answer the user asked for, not a failed request.
//   Data actions (list-topics, list-tables, fetch-schema, fetch-messages)
//   answer 200 with their data, or 400 `{detail: <the same sentence>}` when
//   the system could not be reached or refused them.
// - 422 (located) for a body the type's schema refuses, 404/403 for a
//   connector or data model the caller cannot read, 501 for a type or action
//   this version cannot check.
// - Secrets: `<redacted>` takes the stored value of `?connector_id=` (not
//   when the body names another destination: host, URL, brokers…);
//   `valueFrom` references are resolved from the worker namespace when the
//   secret is granted to the connector's team (no connector: one of the
//   caller's teams), never the control plane's or another object's managed
//   secret (docs/security.md, "Secret references").
// - Every outbound connection goes through the gateway's address policy.

type Config = Record<string, unknown>;

export interface CheckResult {
  ok: boolean;
  message: string;
  details?: Record<string, unknown>;
}

const options = (ctx: GatewayContext) => ({ policy: outboundPolicy(ctx), timeoutMs: CONNECTION_TIMEOUT_MS });

export const notImplemented = (detail: string) => new HttpError(501, detail);

/** The checks this version runs, by type and action. */
const SUPPORTED: Record<string, readonly PreflightAction[]> = {
  KAFKA_SOURCE: ['check-credentials', 'list-topics', 'fetch-messages'],
  POSTGRES_SOURCE: ['check-credentials', 'list-tables', 'fetch-schema'],
  MYSQL_SOURCE: ['check-credentials', 'list-tables', 'fetch-schema'],
  MARIADB_SOURCE: ['check-credentials', 'list-tables', 'fetch-schema'],
  ORACLE_TARGET: ['check-credentials'],
  POSTGRES_TARGET: ['check-credentials'],
  WEBHOOK_TARGET: ['check-credentials'],
};

export function isSupported(def: ConnectorTypeDef, action: PreflightAction): boolean {
  return SUPPORTED[def.type]?.includes(action) ?? false;
}

/** The stored configuration of a connector the caller may read, of the expected type. */
async function storedConfig(ctx: GatewayContext, p: Principal, id: string, def: ConnectorTypeDef) {
  const row = await loadConnector(ctx, p, id);
  if (row.connector_type !== def.type) {
    throw badRequest(`The connector is a ${row.connector_type} connector, not a ${def.type} one`);
  }
  const spec = row.spec as unknown as ConnectorSpec;
  return { id: row.id, teamId: row.team_id as string, config: structuredClone(spec.configuration) as Config };
}

/** The scope a pre-flight's references are checked in: the stored connector's team, else the caller's teams. */
async function preflightScope(ctx: GatewayContext, p: Principal, stored: StoredConnector | undefined) {
  if (!stored) return callerSecretScope(ctx, p);
  return teamSecretScope(ctx, [stored.teamId], [managedSecretName('connector', stored.id)]);
}

/**
 * The configuration to check: the body (or, with `connector_id` and an empty
 * body, the stored configuration) validated against the type's schema — the
 * capture list may be absent, a check does not need it — with its secrets
 * resolved and its defaults filled in.
 */
export async function configurationFor(
  ctx: GatewayContext,
  p: Principal,
  def: ConnectorTypeDef,
  body: Config,
  connectorId: string | undefined,
  loc: (string | number)[] = ['body'],
): Promise<Config> {
  const stored = connectorId ? await storedConfig(ctx, p, connectorId, def) : undefined;
  const given = stored && Object.keys(body).length === 0 ? stored.config : body;
  const issues = validateConnectorConfig(def.type, given)
    .filter((i) => !(i.type === 'missing' && i.loc.length === 1 && i.loc[0] === def.topics_config_key))
    .map((i) => ({ ...i, loc: [...loc, ...i.loc] }));
  if (issues.length) throw unprocessable(issues);
  const scope = await preflightScope(ctx, p, stored);
  const resolved = await resolveSecretFields(ctx, def, given, stored, scope, loc);
  return withConnectorDefaults(def.type, resolved);
}

/** The answer of a database login that worked: `ok` unless the check found something lacking. */
function loggedIn(server: string, r: { server_version: string; warnings: string[] }): CheckResult {
  const base = `Logged in to ${server}`;
  return {
    ok: r.warnings.length === 0,
    message: r.warnings.length ? `${base}, but: ${r.warnings.join('; ')}` : base,
    details: { server_version: r.server_version, warnings: r.warnings },
  };
}

/** Runs a check-credentials; a failure of the system checked is `{ok: false}`. */
export async function checkCredentials(
  ctx: GatewayContext,
  def: ConnectorTypeDef,
  config: Config,
): Promise<CheckResult> {
  const o = options(ctx);
  try {
    switch (def.type) {
      case 'KAFKA_SOURCE': {
        const r = await checkKafka(config, o);
        return {
          ok: true,
          message: `Connected to the Kafka cluster (${r.brokers} broker${r.brokers === 1 ? '' : 's'}, ${r.topics} topic${r.topics === 1 ? '' : 's'} visible)`,
          details: r,
        };
      }
      case 'POSTGRES_SOURCE':
      case 'POSTGRES_TARGET': {
        const r = await checkPostgres(config, o, def.direction === 'source' ? 'source' : 'target');
        return loggedIn(`PostgreSQL ${r.server_version}`, r);
      }
      case 'MYSQL_SOURCE':
      case 'MARIADB_SOURCE': {
        const r = await checkMysql(mysqlEngine(def), config, o);
        return loggedIn(`${mysqlEngine(def)} ${r.server_version}`, r);
      }
      case 'ORACLE_TARGET': {
        const r = await checkOracle(config, o);
        return loggedIn(`Oracle Database ${r.server_version}`, r);
      }
      case 'WEBHOOK_TARGET': {
        const r = await checkWebhook(config, o);
        return { ok: r.ok, message: r.message, ...(r.status ? { details: { status: r.status } } : {}) };
      }
      default:
        throw notImplemented(`check-credentials of ${def.type} is not supported by this version of Sluice`);
    }
  } catch (e) {
    if (e instanceof SystemFailure) return { ok: false, message: e.message };
    throw e;
  }
}

/** A data action's failure to reach the system: 400 with the sentence. */
async function answer<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof SystemFailure) throw badRequest(e.message);
    throw e;
  }
}

export function listTopics(ctx: GatewayContext, config: Config) {
  return answer(async () => ({ topics: await listKafkaTopics(config, options(ctx)) }));
}

/** MYSQL_SOURCE and MARIADB_SOURCE share their checks; the name says which server the user meant. */
const mysqlEngine = (def: ConnectorTypeDef) => (def.type === 'MARIADB_SOURCE' ? 'MariaDB' : 'MySQL');
const isMysql = (def: ConnectorTypeDef) => def.type === 'MYSQL_SOURCE' || def.type === 'MARIADB_SOURCE';

export function listTables(ctx: GatewayContext, def: ConnectorTypeDef, config: Config) {
  return answer(async () => ({
    tables: isMysql(def)
      ? await listMysqlTables(mysqlEngine(def), config, options(ctx))
      : await listPostgresTables(config, options(ctx)),
  }));
}

/** fetch-schema: the tables of `tables` in the body, else the capture list. */
export function fetchSchema(ctx: GatewayContext, def: ConnectorTypeDef, config: Config, tables: unknown) {
  const list = tables === undefined ? config.whitelist : tables;
  if (
    !Array.isArray(list) ||
    list.length === 0 ||
    !list.every((t) => typeof t === 'string' && t.length > 0)
  ) {
    throw invalid(
      ['body', 'tables'],
      `Give the tables as a non-empty list of "${isMysql(def) ? 'database' : 'schema'}.table" (or a whitelist)`,
    );
  }
  if (list.length > 100) throw invalid(['body', 'tables'], 'At most 100 tables per call');
  const names = list as string[];
  return answer(async () => ({
    tables: isMysql(def)
      ? await fetchMysqlSchema(mysqlEngine(def), config, names, options(ctx))
      : await fetchPostgresSchema(config, names, options(ctx)),
  }));
}

/**
 * fetch-messages: the body is exactly one of `{datamodelId}`,
 * `{connectorId, source_topic}` or the inline source configuration (with its
 * `topic`).
 */
export async function fetchMessages(
  ctx: GatewayContext,
  p: Principal,
  def: ConnectorTypeDef,
  body: Config,
  connectorId: string | undefined,
) {
  const keys = Object.keys(body);
  const byDatamodel = 'datamodelId' in body;
  const byConnector = 'connectorId' in body || 'source_topic' in body;
  const limit = body.limit;
  const extra = (allowed: string[]) =>
    keys
      .filter((k) => !allowed.includes(k))
      .map((k) => ({
        loc: ['body', k],
        msg: 'The body is exactly one of {datamodelId}, {connectorId, source_topic} or the inline source configuration',
        type: 'extra_forbidden',
      }));
  let config: Config;
  let topic: string;
  if (byDatamodel || byConnector) {
    const issues: ValidationIssue[] = extra(byDatamodel ? ['datamodelId'] : ['connectorId', 'source_topic']);
    if (byDatamodel && !isUuid(body.datamodelId)) {
      issues.push({
        loc: ['body', 'datamodelId'],
        msg: 'Input should be a valid UUID',
        type: 'uuid_parsing',
      });
    }
    if (!byDatamodel) {
      if (!isUuid(body.connectorId)) {
        issues.push({
          loc: ['body', 'connectorId'],
          msg: 'Input should be a valid UUID',
          type: 'uuid_parsing',
        });
      }
      if (!(typeof body.source_topic === 'string' && /^[A-Za-z0-9._-]{1,249}$/.test(body.source_topic))) {
        issues.push({
          loc: ['body', 'source_topic'],
          msg: 'Input should be a topic name',
          type: 'value_error',
        });
      }
    }
    if (issues.length) throw unprocessable(issues);
    let id: string;
    if (byDatamodel) {
      const dm = await loadDataModel(ctx, p, body.datamodelId as string);
      id = dm.connector_id as string;
      topic = dm.entry as string;
    } else {
      id = body.connectorId as string;
      topic = body.source_topic as string;
    }
    config = await configurationFor(ctx, p, def, {}, id);
  } else {
    const inline: Config = { ...body };
    delete inline.limit;
    if (typeof inline.topic !== 'string') {
      throw invalid(
        ['body', 'topic'],
        'Field required: the topic to read (or send {datamodelId} or {connectorId, source_topic})',
        'missing',
      );
    }
    config = await configurationFor(ctx, p, def, inline, connectorId);
    topic = inline.topic;
  }
  const o = { ...options(ctx), ...(typeof limit === 'number' ? { limit } : {}) };
  return answer(async () => ({ topic, messages: await fetchKafkaMessages(config, topic, o) }));
}

/** POST /envs/check-byok-credentials: the broker settings of an environment (retention_configuration). */
export async function checkByok(ctx: GatewayContext, body: Config): Promise<CheckResult> {
  const config: Config = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== null));
  if (config.sasl_password === REDACTED) {
    throw invalid(['body', 'sasl_password'], `Send the password itself: "${REDACTED}" is not a value`);
  }
  try {
    const r = await checkKafka(config, options(ctx));
    return {
      ok: true,
      message: `Connected to the Kafka cluster (${r.brokers} broker${r.brokers === 1 ? '' : 's'})`,
      details: r,
    };
  } catch (e) {
    if (e instanceof SystemFailure) return { ok: false, message: e.message };
    throw e;
  }
}
