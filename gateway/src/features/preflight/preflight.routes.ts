import { Type, type TSchema } from '@sinclair/typebox';
import { CONNECTOR_TYPES, type ConnectorTypeDef, type PreflightAction } from '@sluice/shared/connectors';
import { RetentionConfigurationInput, Uuid } from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { ok, route, type AnyRoute, type ResponseSpec } from '../../http/route.js';
import * as preflight from './preflight.service.js';

// Spec 4.5: `POST /connector-types/{type segment}/{action}` for every type and
// action of the registry (so the OpenAPI document lists them all); those this
// version cannot run answer 501. `POST /envs/check-byok-credentials` (4.3).

const tag = 'pre-flight';

const Query = Type.Object(
  {
    connector_id: Type.Optional({
      ...Uuid,
      description:
        'A stored connector of the same type: `<redacted>` secret fields take its stored values; with an empty body, its whole configuration is checked',
    }),
  },
  { additionalProperties: false },
);

const AnyBody = Type.Record(Type.String(), Type.Unknown(), {
  description: 'The configuration, as `json_configuration` of the type (the capture list may be left out)',
});

export const CheckResult = Type.Object(
  {
    ok: Type.Boolean({ description: 'Whether the system accepted the connection and the credentials' }),
    message: Type.String({ description: 'One sentence for the user: what worked, or what failed and why' }),
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  },
  { $id: 'PreflightCheckResult', additionalProperties: false },
);

const TopicList = Type.Object(
  { topics: Type.Array(Type.Object({ name: Type.String(), partitions: Type.Integer() })) },
  { $id: 'PreflightTopicList', additionalProperties: false },
);
const TableList = Type.Object(
  {
    tables: Type.Array(
      Type.Object({
        name: Type.String({ description: '`schema.table`, as the capture list spells it' }),
        schema: Type.String(),
        table: Type.String(),
        primary_key: Type.Array(Type.String(), {
          description: 'Primary-key columns in key order; empty: none',
        }),
      }),
    ),
  },
  { $id: 'PreflightTableList', additionalProperties: false },
);
const SchemaList = Type.Object(
  {
    tables: Type.Array(
      Type.Object({
        name: Type.String(),
        exists: Type.Boolean(),
        columns: Type.Array(
          Type.Object({
            name: Type.String(),
            type: Type.String({ description: 'As PostgreSQL formats it (format_type)' }),
            nullable: Type.Boolean(),
            primary_key: Type.Boolean(),
          }),
        ),
      }),
    ),
  },
  { $id: 'PreflightSchemaList', additionalProperties: false },
);
const MessageList = Type.Object(
  {
    topic: Type.String(),
    messages: Type.Array(
      Type.Object({
        partition: Type.Integer(),
        offset: Type.String(),
        timestamp: Type.Number({ description: 'Milliseconds since the epoch' }),
        key: Type.Union([Type.String(), Type.Null()]),
        value: Type.Unknown({ description: 'Parsed JSON, or the text when it is not JSON' }),
        headers: Type.Record(Type.String(), Type.String()),
        truncated: Type.Boolean({ description: 'The value was longer than 4096 characters and was cut' }),
      }),
    ),
  },
  { $id: 'PreflightMessageList', additionalProperties: false },
);
/**
 * The body of a pre-flight action as the document states it: the type's
 * `json_configuration` schema (its required fields, fields required together,
 * patterns), the capture list optional, and `tables` for fetch-schema; or an
 * empty body, which checks the stored configuration of the query's
 * `connector_id` (without it, the empty body lacks the required fields: 422).
 */
function documentedBody(def: ConnectorTypeDef, action: PreflightAction): TSchema {
  const schema = def.schema as TSchema & { $id: string; required?: string[]; properties: object };
  const extra: Record<string, TSchema> =
    action === 'fetch-schema'
      ? {
          tables: Type.Array(Type.String({ minLength: 1 }), {
            minItems: 1,
            maxItems: 100,
            description:
              'The tables (`schema.table`, or `database.table` on MySQL and MariaDB); default: the whitelist',
          }),
        }
      : {};
  const configuration = {
    ...schema,
    $id: `Preflight${schema.$id}${action === 'fetch-schema' ? 'FetchSchema' : ''}`,
    required: (schema.required ?? []).filter((k) => k !== def.topics_config_key),
    properties: { ...schema.properties, ...extra },
    // fetch-schema reads `tables`, else the capture list: one of them is needed.
    ...(action === 'fetch-schema' && def.topics_config_key
      ? { anyOf: [{ required: ['tables'] }, { required: [def.topics_config_key] }] }
      : {}),
  };
  return Type.Union([
    configuration as TSchema,
    Type.Object(
      {},
      { additionalProperties: false, description: 'With `connector_id`: its stored configuration' },
    ),
  ]);
}

/** The inline form of fetch-messages: KAFKA_SOURCE's configuration, with its `topic`, and `limit`. */
function inlineKafkaSource(def: ConnectorTypeDef): TSchema {
  const schema = def.schema as TSchema & { $id: string; properties: object };
  return {
    ...schema,
    $id: `PreflightFetchMessages${schema.$id}`,
    properties: {
      ...schema.properties,
      limit: Type.Integer({ minimum: 1, maximum: 10, description: 'How many messages (default 5)' }),
    },
  } as TSchema;
}

const fetchMessagesBody = (def: ConnectorTypeDef) =>
  Type.Union(
    [
      Type.Object({ datamodelId: Uuid }, { additionalProperties: false }),
      Type.Object(
        { connectorId: Uuid, source_topic: Type.String({ pattern: '^[A-Za-z0-9._-]{1,249}$' }) },
        { additionalProperties: false },
      ),
      inlineKafkaSource(def),
    ],
    { description: 'Exactly one of the three forms' },
  );

const errors = {
  403: { description: 'connector_id (or the data model) belongs to a team the caller is not in' },
  404: { description: 'No such connector or data model' },
  422: { description: 'The body is not a valid configuration (every issue, located)' },
};

const SUMMARY: Record<PreflightAction, string> = {
  'check-credentials': 'Connect and authenticate with a configuration (nothing is saved)',
  'fetch-messages': 'A few recent messages of the topic (at most 10, values cut at 4096 characters)',
  'list-topics': 'Topics of the cluster',
  'list-tables': 'Tables of the database (schema.table) with their primary keys',
  'list-collections': 'Collections of the database',
  'fetch-schema': 'Columns and types of the given tables (`tables`, else the whitelist)',
  warehouses: 'Warehouses of the account',
};

const RESPONSE: Partial<Record<PreflightAction, TSchema>> = {
  'list-topics': TopicList,
  'list-tables': TableList,
  'fetch-schema': SchemaList,
  'fetch-messages': MessageList,
};

/** What a type's check does, where it says more than the generic description. */
const CHECK_NOTES: Partial<Record<string, string>> = {
  ORACLE_TARGET:
    ' Oracle: logs in with node-oracledb in thin mode over TCP (the configuration has no TLS fields; servers that require native network encryption are refused), 5 s to connect, then reads the session privileges: `ok` false when the user lacks CREATE TABLE. Nothing is created or written.',
};

function actionRoute(ctx: GatewayContext, def: ConnectorTypeDef, action: PreflightAction): AnyRoute {
  const supported = preflight.isSupported(def, action);
  const check = action === 'check-credentials';
  const responses: Record<number, ResponseSpec> = { ...errors };
  if (supported && check) responses[200] = { description: 'The check ran', schema: CheckResult };
  if (supported && !check) {
    responses[200] = { description: 'The answer', schema: RESPONSE[action] ?? CheckResult };
    responses[400] = {
      description:
        'The system could not be reached or refused the credentials, or connector_id is of another type',
    };
  }
  if (supported && check) responses[400] = { description: 'connector_id names a connector of another type' };
  responses[501] = { description: 'Not supported by this version of Sluice' };
  return route({
    method: 'post',
    path: `/connector-types/${def.segment}/${action}`,
    tag,
    auth: 'user',
    summary: `${def.title}: ${SUMMARY[action]}`,
    description: supported
      ? check
        ? 'Answers 200 whenever the check ran: `ok` false with the reason (wrong password, unreachable host, denied address) in `message`. Secrets are never echoed.' +
          (CHECK_NOTES[def.type] ?? '')
        : 'Answers 400 `{detail}` with the reason when the system cannot be reached or refuses the credentials.'
      : 'Not supported by this version of Sluice: answers 501.',
    query: Query,
    body: AnyBody,
    documentedBody: action === 'fetch-messages' ? fetchMessagesBody(def) : documentedBody(def, action),
    responses,
    handler: async ({ principal, query, body }) => {
      if (!supported) {
        throw preflight.notImplemented(`${action} of ${def.type} is not supported by this version of Sluice`);
      }
      if (action === 'fetch-messages') {
        return ok(await preflight.fetchMessages(ctx, principal, def, body, query.connector_id));
      }
      const input = { ...body };
      const tables = input.tables;
      if (action === 'fetch-schema') delete input.tables;
      const config = await preflight.configurationFor(ctx, principal, def, input, query.connector_id);
      switch (action) {
        case 'check-credentials':
          return ok(await preflight.checkCredentials(ctx, def, config));
        case 'list-topics':
          return ok(await preflight.listTopics(ctx, config));
        case 'list-tables':
          return ok(await preflight.listTables(ctx, def, config));
        default:
          return ok(await preflight.fetchSchema(ctx, def, config, tables));
      }
    },
  });
}

export function preflightRoutes(ctx: GatewayContext): AnyRoute[] {
  const routes = CONNECTOR_TYPES.flatMap((def) =>
    def.preflight.map((action) => actionRoute(ctx, def, action)),
  );
  routes.push(
    route({
      method: 'post',
      path: '/envs/check-byok-credentials',
      tag,
      auth: 'user',
      summary: "Connect to an environment's own Kafka broker (retention_configuration) with these settings",
      description:
        'The body is the `retention_configuration` of an environment; the password must be sent (not `<redacted>`). Answers 200 `{ok, message}` whenever the check ran.',
      body: RetentionConfigurationInput,
      responses: {
        200: { description: 'The check ran', schema: CheckResult },
        422: { description: 'Invalid settings (every issue, located)' },
      },
      handler: async ({ body }) => ok(await preflight.checkByok(ctx, body as Record<string, unknown>)),
    }),
  );
  return routes;
}
