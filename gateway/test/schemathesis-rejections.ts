import { randomUUID } from 'node:crypto';
import { CONNECTOR_TYPES, type ConnectorTypeDef, type PreflightAction } from '@sluice/shared/connectors';
import { isSupported } from '../src/features/preflight/preflight.service.js';
import type { TestGateway, TestUser } from './harness.js';
import type { Seeded } from './schemathesis-seed.js';

// The rejections of schema-valid requests that the Schemathesis test
// (schemathesis.test.ts) accepts, each with its witnesses: concrete requests
// that the served OpenAPI document accepts and the server rejects exactly as
// the entry says. schemathesis-rejections.test.ts sends every witness, so an
// entry (or one of its operations) that outlives the rule it excuses fails
// the suite deterministically, whatever the fuzzer happened to generate.

/** What a witness's request is built from: the seeded objects and the gateway that holds them. */
export interface WitnessContext {
  gw: TestGateway;
  admin: TestUser;
  seeded: Seeded;
}

/** One request: the operation's path parameters, query and JSON body. */
export interface WitnessRequest {
  params?: Record<string, string>;
  query?: Record<string, string>;
  /** The JSON body; absent: none. */
  body?: unknown;
  /** The caller; the seeded superuser when absent. */
  as?: TestUser;
}

export interface Witness {
  /** The operation as Schemathesis labels it (`METHOD /path` of the document), never a wildcard. */
  operation: string;
  request(s: WitnessContext): WitnessRequest | Promise<WitnessRequest>;
}

/**
 * A rejection of schema-valid requests that depends on the server's state, not
 * on the request's shape, so the document cannot state it: the operations,
 * the status and a pattern every detail (each 422 issue's `msg`, or a 400's
 * `code: reason`) must match. Everything the document can state is stated
 * there instead (password lengths, fields required together, the pre-flight
 * body forms), so this list only names what a schema cannot know.
 */
export interface Rejection {
  /** Operation labels (`METHOD /path`); one ending in `*` names those that start with the rest. */
  operations: string[];
  status: number;
  /** A pattern that every detail of the answer matches. */
  detail: string;
  /** Only for a request with an empty body and no `connector_id` in its query. */
  emptyBodyWithoutConnectorId?: boolean;
  /** Only when every issue's `loc` starts with one of these. */
  locPrefixes?: string[][];
  reason: string;
  /**
   * Requests the document accepts and the server rejects as this entry says,
   * which no other entry excuses: at least one per operation (per route for a
   * wildcard), so the entry is needed as long as they are rejected.
   */
  witnesses: Witness[];
}

/** What the hook (schemathesis-hooks.py) reads of an entry: everything but the witnesses. */
export function hookEntries(): Omit<Rejection, 'witnesses'>[] {
  return REJECTIONS.map(({ witnesses: _, ...entry }) => entry);
}

/** Whether an entry's operation (`*` at the end: a prefix) names the operation `label`. */
export function names(op: string, label: string): boolean {
  return op.endsWith('*') ? label.startsWith(op.slice(0, -1)) : label === op;
}

// The hook's rule (schemathesis-hooks.py, `filter_failure`) restated here,
// so that the witnesses are judged as the hook judges the fuzzer's requests:
// keep the two alike.

/** The answer's details as the hook reads them: each 422 issue's msg, or a 400's `code: reason`. */
export function details(body: unknown): string[] | undefined {
  const detail = (body as { detail?: unknown } | undefined)?.detail;
  if (typeof detail === 'string') return [detail];
  if (Array.isArray(detail))
    return detail.length === 0
      ? undefined
      : detail.map((i) => (i && typeof i === 'object' ? String((i as { msg?: unknown }).msg ?? 'None') : ''));
  if (detail && typeof detail === 'object') {
    const d = detail as { code?: unknown; reason?: unknown };
    return [`${String(d.code ?? 'None')}: ${String(d.reason ?? 'None')}`];
  }
  return undefined;
}

/** The `loc` of each issue of a 422 answer. */
export function locs(body: unknown): unknown[][] {
  const detail = (body as { detail?: unknown } | undefined)?.detail;
  return Array.isArray(detail)
    ? detail.flatMap((i) =>
        i && typeof i === 'object' ? [((i as { loc?: unknown[] }).loc ?? []) as unknown[]] : [],
      )
    : [];
}

/** Whether `entry` drops the failure of `label` answered `status` `body` to `request`: the hook's rule. */
export function excuses(
  entry: Omit<Rejection, 'witnesses'>,
  label: string,
  request: { query?: Record<string, string>; body?: unknown },
  status: number,
  body: unknown,
): boolean {
  const texts = details(body);
  if (!texts || status !== entry.status || !entry.operations.some((op) => names(op, label))) return false;
  if (!texts.every((t) => new RegExp(entry.detail).test(t))) return false;
  if (entry.emptyBodyWithoutConnectorId) {
    const b = request.body;
    const empty =
      b === undefined ||
      (typeof b === 'object' && b !== null && !Array.isArray(b) && Object.keys(b).length === 0);
    if (!empty || request.query?.connector_id) return false;
  }
  const prefixes = entry.locPrefixes;
  return !prefixes || locs(body).every((loc) => prefixes.some((p) => p.every((part, i) => loc[i] === part)));
}

const unknownId = () => randomUUID();
/** The first seeded id of a kind (as the run's dictionaries name them). */
function seededId(s: WitnessContext, kind: string, index = 0): string {
  const id = s.seeded.ids[kind]?.[index];
  if (!id) throw new Error(`nothing of kind ${kind} was seeded`);
  return id;
}
const seededTeam = (s: WitnessContext) => seededId(s, 'team');
const sourceId = (s: WitnessContext) => seededId(s, 'connector');
const targetId = (s: WitnessContext) => seededId(s, 'connector', 1);
const datamodelId = (s: WitnessContext) => seededId(s, 'datamodel');
const pipelineId = (s: WitnessContext) => seededId(s, 'pipeline');
const subscriptionId = (s: WitnessContext) => seededId(s, 'subscription');
/** A reference to a secret that does not exist (so is granted to no one). */
const missingSecret = { valueFrom: { secretKeyRef: { name: 'witness-no-such-secret', key: 'password' } } };
/** A mapping with a path the mapper cannot read (two pipes in a row). */
const badPathMapping = [{ key: 'id', path: 'a||b' }];
/** A mapping whose passphrase is a reference to a missing secret. */
const secretMapping = [
  { key: 'id', path: 'id', primary_key: true, encrypt_method: 'aes-256-gcm', encrypt_key: missingSecret },
];
/** A new warehouse of the seeded team, with an inline token. */
const warehouse = (s: WitnessContext) => ({
  name: `witness-${randomUUID().slice(0, 8)}`,
  team_id: seededTeam(s),
  server_hostname: 'adb-1.azuredatabricks.net',
  http_path: '/sql/1.0/warehouses/abc',
  access_token: 'dapi-witness',
});
/** 37 characters, 74 bytes of UTF-8: within the document's length in characters, over bcrypt's 72 bytes. */
const overlongPassword = 'é'.repeat(37);
/** A new pipeline of the seeded team between the seeded connectors, with `change`. */
const newPipeline = (s: WitnessContext, change: Record<string, unknown>) => ({
  name: 'witness',
  team_id: seededTeam(s),
  existing_source_id: sourceId(s),
  existing_target_id: targetId(s),
  ...change,
});
/** The seeded pipeline's whole flattened body, as POST /pipelines/{id}/configuration takes it, with `change`. */
async function pipelineConfiguration(s: WitnessContext, change: Record<string, unknown>) {
  const current = (await s.gw.http.get(`/api/pipelines/${pipelineId(s)}`).set(s.admin.auth)).body as {
    version: number;
  };
  return {
    params: { id: pipelineId(s) },
    body: {
      name: 'fuzz-pipeline',
      team_id: seededTeam(s),
      version: current.version,
      existing_source_id: sourceId(s),
      existing_target_id: targetId(s),
      ...change,
    },
  };
}
/** The token of the reset mail a fresh user asked for. */
async function resetToken(s: WitnessContext): Promise<string> {
  const user = await s.gw.user();
  await s.gw.http.post('/api/auth/forgot-password').send({ email: user.email });
  const mail = s.gw.outbox().findLast((m) => m.to === user.email);
  if (!mail) throw new Error(`no reset mail reached ${user.email}`);
  return mail.token;
}

/** The pre-flight routes that have an engine: the others answer 501 before they read the body. */
const PREFLIGHT = CONNECTOR_TYPES.flatMap((def) =>
  def.preflight
    .filter((action) => isSupported(def, action))
    .map((action) => ({ def, action, operation: `POST /connector-types/${def.segment}/${action}` })),
);

/** Per type with a pre-flight engine: a configuration at `host`, with `secret` in its secret field. */
const PREFLIGHT_CONFIG: Partial<Record<string, (host: string, secret: unknown) => Record<string, unknown>>> =
  {
    KAFKA_SOURCE: (host, secret) => ({
      bootstrap_servers: `${host}:9092`,
      security_protocol: 'SASL_PLAINTEXT',
      sasl_mechanism: 'PLAIN',
      sasl_username: 'witness',
      sasl_password: secret,
    }),
    POSTGRES_SOURCE: (host, secret) => ({ host, database: 'shop', user: 'cdc', password: secret }),
    MYSQL_SOURCE: (host, secret) => ({ host, user: 'cdc', password: secret }),
    MARIADB_SOURCE: (host, secret) => ({ host, user: 'cdc', password: secret }),
    ORACLE_TARGET: (host, secret) => ({
      host,
      port: '1521',
      database: 'ORCL',
      user: 'loader',
      password: secret,
      server_name: 'orcl',
      server_id: '1',
    }),
    POSTGRES_TARGET: (host, secret) => ({ host, database: 'dwh', user: 'loader', password: secret }),
    WEBHOOK_TARGET: (host, secret) => ({
      url: `http://${host}/hook`,
      auth_type: 'bearer',
      bearer_token: secret,
    }),
  };

/** The body of a pre-flight `action` of `def` with a whole configuration at `host`. */
function preflightBody(def: ConnectorTypeDef, action: PreflightAction, host: string, secret: unknown) {
  const make = PREFLIGHT_CONFIG[def.type];
  if (!make) throw new Error(`${def.type} has a pre-flight engine: give it a witness configuration`);
  const config = make(host, secret);
  if (action === 'fetch-messages') return { ...config, topic: 'witness' };
  if (action === 'fetch-schema') return { ...config, tables: ['shop.orders'] };
  return config;
}

/** An address the outbound policy denies (link-local): refused at once, before any connection. */
const DENIED_HOST = '169.254.169.254';

export const REJECTIONS: Rejection[] = [
  {
    reason:
      'An id in the body that names no object the caller can use: 422 at that field (spec 7: a validation ' +
      'error of the body; 404 is kept for the resource the path names). The seeded ids reach the paths; ' +
      'a random UUID in a body names nothing.',
    operations: [
      'POST /api-keys',
      'POST /connectors/',
      'PATCH /connectors/{id}',
      'POST /warehouses/',
      'PATCH /warehouses/{id}',
      'POST /users/me/service-account-token',
      'POST /backfills/',
      'POST /backfills/preview',
      'POST /k8s-secrets',
      'POST /subscriptions/',
      'POST /subscriptions/subscribe-all',
      'POST /teams/{id}/members/bulk',
      'POST /pipelines/',
      'PATCH /datamodels/{id}/error-table',
      'PATCH /users/me',
      'PATCH /users/{id}',
      'PATCH /subscriptions/{id}',
      'PATCH /pipelines/{id}',
    ],
    status: 422,
    detail:
      '^(No such |Unknown |Not a (source|target) connector|The user is not a member|The connector belongs to another team|' +
      'The data model belongs to none|The connectors and data models belong to more than one team)',
    witnesses: [
      { operation: 'POST /api-keys', request: () => ({ body: { name: 'witness', env_ids: [unknownId()] } }) },
      {
        operation: 'POST /connectors/',
        request: () => ({
          body: {
            name: 'witness',
            team_id: unknownId(),
            connector_type: 'KAFKA_SOURCE',
            json_configuration: {},
          },
        }),
      },
      {
        operation: 'PATCH /connectors/{id}',
        request: (s) => ({ params: { id: sourceId(s) }, body: { team_id: unknownId() } }),
      },
      {
        operation: 'POST /warehouses/',
        request: (s) => ({ body: { ...warehouse(s), team_id: unknownId() } }),
      },
      {
        operation: 'PATCH /warehouses/{id}',
        request: async (s) => {
          const created = await s.gw.http.post('/api/warehouses/').set(s.admin.auth).send(warehouse(s));
          if (created.status !== 201)
            throw new Error(`warehouse: ${created.status} ${JSON.stringify(created.body)}`);
          return { params: { id: String(created.body.id) }, body: { team_id: unknownId() } };
        },
      },
      {
        operation: 'POST /users/me/service-account-token',
        request: () => ({ body: { name: 'witness', team_id: unknownId() } }),
      },
      {
        operation: 'POST /backfills/',
        request: () => ({
          body: { source_connector_ids: [unknownId()], datamodel_ids: [], target_connector_ids: [] },
        }),
      },
      {
        operation: 'POST /backfills/preview',
        request: () => ({
          body: { source_connector_ids: [unknownId()], datamodel_ids: [], target_connector_ids: [] },
        }),
      },
      {
        operation: 'POST /k8s-secrets',
        request: () => ({
          body: { name: 'witness-secret', data: { key: 'value' }, allowed_team_ids: [unknownId()] },
        }),
      },
      {
        operation: 'POST /subscriptions/',
        request: (s) => ({ body: { datamodel_id: unknownId(), target_connector_id: targetId(s) } }),
      },
      {
        operation: 'POST /subscriptions/subscribe-all',
        request: (s) => ({ body: { datamodel_ids: [unknownId()], target_connector_ids: [targetId(s)] } }),
      },
      {
        operation: 'POST /teams/{id}/members/bulk',
        request: (s) => ({ params: { id: seededTeam(s) }, body: { members: [unknownId()] } }),
      },
      {
        operation: 'POST /pipelines/',
        request: (s) => ({ body: newPipeline(s, { existing_source_id: unknownId() }) }),
      },
      {
        operation: 'PATCH /datamodels/{id}/error-table',
        request: (s) => ({
          params: { id: seededId(s, 'datamodel') },
          body: { error_table_target_id: unknownId() },
        }),
      },
      {
        operation: 'PATCH /users/me',
        request: (s) => ({ body: { active_env_id: unknownId() }, as: s.seeded.member }),
      },
      {
        operation: 'PATCH /users/{id}',
        request: (s) => ({ params: { id: s.seeded.member.id }, body: { active_env_id: unknownId() } }),
      },
      {
        operation: 'PATCH /subscriptions/{id}',
        request: (s) => ({
          params: { id: seededId(s, 'subscription') },
          body: { error_table_target_id: unknownId() },
        }),
      },
      {
        operation: 'PATCH /pipelines/{id}',
        request: (s) => ({
          params: { id: pipelineId(s) },
          body: { existing_source_id: unknownId() },
        }),
      },
    ],
  },
  {
    reason:
      'A single-use token the server mailed, or the current password: secrets the fuzzer cannot know ' +
      '(spec 7 names these 400s).',
    operations: ['POST /auth/reset-password', 'POST /auth/verify', 'POST /users/me/change-password'],
    status: 400,
    detail:
      '^(RESET_PASSWORD_BAD_TOKEN|VERIFY_USER_BAD_TOKEN|VERIFY_USER_ALREADY_VERIFIED|CHANGE_PASSWORD_BAD_PASSWORD)$',
    witnesses: [
      {
        operation: 'POST /auth/reset-password',
        request: () => ({ body: { token: 'not-a-mailed-token', password: 'a-new-password-1' } }),
      },
      { operation: 'POST /auth/verify', request: () => ({ body: { token: 'not-a-mailed-token' } }) },
      {
        operation: 'POST /users/me/change-password',
        request: async (s) => ({
          body: { old_password: 'not-the-password', new_password: 'a-new-password-1' },
          as: await s.gw.user(),
        }),
      },
    ],
  },
  {
    reason:
      'The password rules the document cannot state (it states the length in characters): at most 72 bytes ' +
      "of UTF-8 (what bcrypt reads), and not containing the account's e-mail address (spec 7 names these 400s).",
    operations: [
      'POST /auth/register',
      'POST /auth/reset-password',
      'PATCH /users/me',
      'PATCH /users/{id}',
      'POST /users/me/change-password',
    ],
    status: 400,
    detail:
      '^(REGISTER|RESET_PASSWORD|UPDATE_USER)_INVALID_PASSWORD: Password should (be at most 72 bytes|not contain e-mail)$',
    witnesses: [
      {
        operation: 'POST /auth/register',
        request: () => ({
          body: { email: `witness-${randomUUID()}@example.com`, password: overlongPassword },
        }),
      },
      {
        operation: 'POST /auth/reset-password',
        request: async (s) => ({ body: { token: await resetToken(s), password: overlongPassword } }),
      },
      {
        operation: 'PATCH /users/me',
        request: async (s) => ({ body: { password: overlongPassword }, as: await s.gw.user() }),
      },
      {
        operation: 'PATCH /users/{id}',
        request: async (s) => ({
          params: { id: (await s.gw.user()).id },
          body: { password: overlongPassword },
        }),
      },
      {
        operation: 'POST /users/me/change-password',
        request: async (s) => {
          const user = await s.gw.user();
          return { body: { old_password: user.password, new_password: overlongPassword }, as: user };
        },
      },
    ],
  },
  {
    reason:
      "A pre-flight with an empty body checks the stored configuration of the query's connector_id; without " +
      'one it lacks the required fields. Which body is complete depends on a query parameter, which the ' +
      "JSON Schema of a body cannot see (the document says it in the empty form's description).",
    operations: ['POST /connector-types/*'],
    status: 422,
    detail: '^Field required',
    emptyBodyWithoutConnectorId: true,
    witnesses: PREFLIGHT.filter((r) => r.action !== 'fetch-messages')
      // fetch-messages has no empty form: its body is one of three forms, each with required fields.
      .map((r) => ({ operation: r.operation, request: () => ({ body: {} }) })),
  },
  {
    reason:
      "import-all replaces every account: the document must keep the caller's own account as an active " +
      "superuser, or the caller would lock themselves out; which account is the caller's is not in the body. " +
      'And its ids refer to one another across its arrays (a team to an environment of the document), which ' +
      'JSON Schema cannot relate.',
    operations: ['POST /users/import-all'],
    status: 422,
    detail:
      '^(The document must keep your own account as an active superuser|Unknown (user|team|environment)|' +
      'A team must belong to an environment of the document)$',
    witnesses: [
      {
        operation: 'POST /users/import-all',
        // The caller's account left out: refused whatever else the document holds.
        request: () => ({ body: { users: [], envs: [], teams: [], env_members: [], team_members: [] } }),
      },
    ],
  },
  {
    reason:
      'The `schema` string must hold a valid Avro or JSON Schema definition: a rule on the content of a ' +
      'string that JSON Schema cannot state (`contentMediaType` says JSON, not a valid schema).',
    operations: ['POST /schemas/{subject}'],
    status: 422,
    detail: '^(Invalid Avro schema|Invalid JSON Schema|The schema is not valid JSON)',
    witnesses: [
      {
        operation: 'POST /schemas/{subject}',
        request: () => ({
          params: { subject: 'witness-subject' },
          body: { schema: '{"type": "record", "name": "r"}', schema_type: 'AVRO' },
        }),
      },
    ],
  },
  {
    reason:
      'A secret reference (`valueFrom.secretKeyRef`) names a Kubernetes Secret that must exist, be granted ' +
      "to the caller's team or environment and have the key: state, not shape.",
    operations: [
      'POST /connector-types/*',
      'POST /pipelines/',
      'PATCH /pipelines/{id}',
      'POST /subscriptions/',
      'PATCH /subscriptions/{id}',
      'POST /warehouses/',
      'PATCH /warehouses/{id}',
    ],
    status: 422,
    detail: '^(Secret ".*" is not granted|Secret ".*" has no key)',
    witnesses: [
      ...PREFLIGHT.map((r) => ({
        operation: r.operation,
        request: () => ({ body: preflightBody(r.def, r.action, 'witness.internal', missingSecret) }),
      })),
      {
        operation: 'POST /pipelines/',
        request: (s) => ({ body: newPipeline(s, { subscription_mapper_config: secretMapping }) }),
      },
      {
        operation: 'PATCH /pipelines/{id}',
        request: (s) => ({
          params: { id: pipelineId(s) },
          body: { subscription_mapper_config: secretMapping },
        }),
      },
      {
        operation: 'POST /subscriptions/',
        request: (s) => ({
          body: {
            datamodel_id: datamodelId(s),
            target_connector_id: targetId(s),
            mapper_config: secretMapping,
          },
        }),
      },
      {
        operation: 'PATCH /subscriptions/{id}',
        request: (s) => ({ params: { id: subscriptionId(s) }, body: { mapper_config: secretMapping } }),
      },
      {
        operation: 'POST /warehouses/',
        request: (s) => ({ body: { ...warehouse(s), access_token: missingSecret } }),
      },
      {
        operation: 'PATCH /warehouses/{id}',
        request: async (s) => {
          const created = await s.gw.http.post('/api/warehouses/').set(s.admin.auth).send(warehouse(s));
          if (created.status !== 201)
            throw new Error(`warehouse: ${created.status} ${JSON.stringify(created.body)}`);
          return { params: { id: String(created.body.id) }, body: { access_token: missingSecret } };
        },
      },
    ],
  },
  {
    reason:
      'A pre-flight data action on a system that cannot be reached or refuses the credentials answers the ' +
      'documented 400 with the reason: a property of the world the request points at, not of the request.',
    operations: ['POST /connector-types/*'],
    status: 400,
    detail: '',
    witnesses: PREFLIGHT.filter((r) => r.action !== 'check-credentials')
      // A check answers 200 with `ok` false and the reason instead.
      .map((r) => ({
        operation: r.operation,
        request: () => ({ body: preflightBody(r.def, r.action, DENIED_HOST, 'witness-password') }),
      })),
  },
  {
    reason:
      'PATCH with use_retention true keeps the stored broker settings when it sends none: whether there are ' +
      "some is the environment's state (POST states the rule in the document).",
    operations: ['PATCH /envs/{id}'],
    status: 422,
    detail: '^use_retention needs the broker settings',
    witnesses: [
      // The seeded environment has no broker settings.
      {
        operation: 'PATCH /envs/{id}',
        request: (s) => ({ params: { id: seededId(s, 'env') }, body: { use_retention: true } }),
      },
    ],
  },
  {
    reason:
      'Only a target connector takes a replica count other than 1: a source has one reader (its replication ' +
      'slot, binary log position or consumer). The count depends on connector_type, the stored one for a ' +
      "PATCH (state); the document says so in the field's description.",
    operations: ['POST /connectors/', 'PATCH /connectors/{id}'],
    status: 422,
    detail: '^A [A-Z_]+ runs one worker: ',
    locPrefixes: [['body', 'replicas']],
    witnesses: [
      {
        operation: 'POST /connectors/',
        request: (s) => ({
          body: {
            name: 'witness',
            team_id: seededTeam(s),
            connector_type: 'KAFKA_SOURCE',
            json_configuration: {},
            replicas: 2,
          },
        }),
      },
      {
        operation: 'PATCH /connectors/{id}',
        request: (s) => ({ params: { id: sourceId(s) }, body: { replicas: 2 } }),
      },
    ],
  },
  {
    reason:
      'A field that names what the object already is must equal it: the stored connector_type, the ' +
      "pipeline's team (clients send the read shape back), a topic of the source's capture list.",
    operations: ['PATCH /connectors/{id}', 'PATCH /pipelines/{id}', 'POST /pipelines/{id}/configuration'],
    status: 422,
    detail:
      '^(connector_type cannot change after creation|A pipeline cannot move to another team|' +
      'Not in the capture list of the source)',
    witnesses: [
      {
        operation: 'PATCH /connectors/{id}',
        request: (s) => ({ params: { id: sourceId(s) }, body: { connector_type: 'POSTGRES_SOURCE' } }),
      },
      {
        operation: 'PATCH /pipelines/{id}',
        request: async (s) => {
          const other = await s.gw.http
            .post('/api/teams/')
            .set(s.admin.auth)
            .send({ name: `witness-${randomUUID().slice(0, 8)}` });
          if (other.status !== 201) throw new Error(`team: ${other.status} ${JSON.stringify(other.body)}`);
          return { params: { id: pipelineId(s) }, body: { team_id: String(other.body.id) } };
        },
      },
      {
        operation: 'POST /pipelines/{id}/configuration',
        request: (s) => pipelineConfiguration(s, { datamodel_source_topic: 'not-captured' }),
      },
    ],
  },
  {
    reason:
      "Mapper rules beyond their schema (the document states the rules' shape): path syntax, strftime " +
      "directives and unique keys are rules on strings' content and across array items; a table target " +
      "needs a primary_key rule, which depends on the target's type (state).",
    operations: [
      'POST /subscriptions/',
      'PATCH /subscriptions/{id}',
      'POST /subscriptions/subscribe-all',
      'POST /pipelines/',
      'PATCH /pipelines/{id}',
      'POST /pipelines/{id}/configuration',
    ],
    status: 422,
    detail:
      '^(Invalid path |Invalid cast_format|Duplicate key |' +
      '.* writes tables: the mapping needs at least one rule with primary_key true|' +
      'A target that writes database tables needs at least one rule with primary_key true)',
    witnesses: [
      {
        operation: 'POST /subscriptions/',
        request: (s) => ({
          body: {
            datamodel_id: datamodelId(s),
            target_connector_id: targetId(s),
            mapper_config: badPathMapping,
          },
        }),
      },
      {
        operation: 'PATCH /subscriptions/{id}',
        request: (s) => ({ params: { id: subscriptionId(s) }, body: { mapper_config: badPathMapping } }),
      },
      {
        operation: 'POST /subscriptions/subscribe-all',
        request: (s) => ({
          body: {
            datamodel_ids: [datamodelId(s)],
            target_connector_ids: [targetId(s)],
            mapper_config: badPathMapping,
          },
        }),
      },
      {
        operation: 'POST /pipelines/',
        request: (s) => ({ body: newPipeline(s, { subscription_mapper_config: badPathMapping }) }),
      },
      {
        operation: 'PATCH /pipelines/{id}',
        request: (s) => ({
          params: { id: pipelineId(s) },
          body: { subscription_mapper_config: badPathMapping },
        }),
      },
      {
        operation: 'POST /pipelines/{id}/configuration',
        request: (s) => pipelineConfiguration(s, { subscription_mapper_config: badPathMapping }),
      },
    ],
  },
  {
    reason:
      "A connector's json_configuration (a pipeline's source_config, target_config) follows the schema of its connector_type (GET /connector-types/ " +
      'lists them). Stated in the document as one if/then per type (some 25), Schemathesis cannot generate ' +
      'from it ("Schema Error"), so the document names the rule in its description and leaves the value ' +
      'free-form; a PATCH without connector_type is checked against the stored type (state).',
    operations: ['POST /connectors/', 'PATCH /connectors/{id}', 'POST /pipelines/', 'PATCH /pipelines/{id}'],
    status: 422,
    detail: '',
    locPrefixes: [
      ['body', 'json_configuration'],
      ['body', 'source_config'],
      ['body', 'target_config'],
    ],
    witnesses: [
      {
        operation: 'POST /connectors/',
        request: (s) => ({
          body: {
            name: 'witness',
            team_id: seededTeam(s),
            connector_type: 'KAFKA_SOURCE',
            json_configuration: {},
          },
        }),
      },
      {
        operation: 'PATCH /connectors/{id}',
        // The topic is kept from before; the broker list is missing.
        request: (s) => ({ params: { id: sourceId(s) }, body: { json_configuration: {} } }),
      },
      {
        operation: 'POST /pipelines/',
        request: (s) => ({
          body: {
            name: 'witness',
            team_id: seededTeam(s),
            source_name: 'witness-src',
            source_type: 'KAFKA_SOURCE',
            source_config: {},
            existing_target_id: targetId(s),
          },
        }),
      },
      {
        operation: 'PATCH /pipelines/{id}',
        request: (s) => ({
          params: { id: pipelineId(s) },
          body: {
            existing_source_id: null,
            source_name: 'witness-src',
            source_type: 'KAFKA_SOURCE',
            source_config: {},
          },
        }),
      },
    ],
  },
  {
    reason:
      "Without env_id, the caller's active environment is the one meant: whether the caller has one is " +
      'state (a run may clear it through PATCH /users/me).',
    operations: ['GET /teams/', 'GET /teams/filter-one'],
    status: 422,
    detail: '^No environment selected',
    witnesses: [
      // A user who just registered has no active environment.
      { operation: 'GET /teams/', request: async (s) => ({ as: await s.gw.user() }) },
      {
        operation: 'GET /teams/filter-one',
        request: async (s) => ({ query: { name: 'fuzz-team' }, as: await s.gw.user() }),
      },
    ],
  },
  {
    reason: "The e-mail address is already another account's (spec 7 names these 400s).",
    operations: ['POST /auth/register', 'PATCH /users/me', 'PATCH /users/{id}'],
    status: 400,
    detail: '^(REGISTER_USER_ALREADY_EXISTS|UPDATE_USER_EMAIL_ALREADY_EXISTS)$',
    witnesses: [
      {
        operation: 'POST /auth/register',
        request: (s) => ({ body: { email: s.seeded.member.email, password: 'correct-horse-battery' } }),
      },
      {
        operation: 'PATCH /users/me',
        request: async (s) => ({ body: { email: s.seeded.member.email }, as: await s.gw.user() }),
      },
      {
        operation: 'PATCH /users/{id}',
        request: async (s) => ({
          params: { id: (await s.gw.user()).id },
          body: { email: s.seeded.member.email },
        }),
      },
    ],
  },
];
