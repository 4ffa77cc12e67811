import { Kind, type TSchema } from '@sinclair/typebox';
import { ErrorBody, ValidationErrorBody } from '@sluice/shared/schemas';
import { SLUICE_VERSION } from '@sluice/shared/util';
import { MAX_JSON_DEPTH, NO_NUL_PATTERN } from './input-limits.js';
import type { AnyRoute } from './route.js';

type Json = Record<string, unknown>;

/**
 * The input limits (http/input-limits.ts) as the document states them: no
 * string or object key holds NUL. A string with its own pattern gets the rule
 * as a second pattern (`allOf`); formats, enums and constants exclude NUL already.
 */
function withInputLimits(s: Json): Json {
  if (s.type === 'string' && !('format' in s) && !('const' in s) && !('enum' in s)) {
    if (!('pattern' in s)) s.pattern = NO_NUL_PATTERN;
    else if (s.pattern !== NO_NUL_PATTERN)
      s.allOf = [...((s.allOf as Json[] | undefined) ?? []), { pattern: NO_NUL_PATTERN }];
  }
  if (s.type === 'object' && s.additionalProperties !== false && !('propertyNames' in s)) {
    s.propertyNames = { pattern: NO_NUL_PATTERN };
  }
  return s;
}

const FREE_FORM = new Set(['Unknown', 'Any']);
const JSON_VALUE_REF = '#/components/schemas/JsonValue';
/** Any JSON value in which no string and no object key holds NUL (the input limits). */
const JSON_VALUE: Json = {
  description: 'Any JSON value; no string or object key contains NUL (U+0000), at any depth',
  anyOf: [
    { type: 'string', pattern: NO_NUL_PATTERN },
    { type: ['number', 'boolean', 'null'] },
    { type: 'array', items: { $ref: JSON_VALUE_REF } },
    {
      type: 'object',
      propertyNames: { pattern: NO_NUL_PATTERN },
      additionalProperties: { $ref: JSON_VALUE_REF },
    },
  ],
};

/** Whether `{}` misses a field the schema requires (in every branch of a union). */
function needsBody(schema: unknown): boolean {
  const s = schema as { required?: string[]; anyOf?: unknown[] };
  if ((s.required ?? []).length > 0) return true;
  return Array.isArray(s.anyOf) && s.anyOf.length > 0 && s.anyOf.every(needsBody);
}

/**
 * Builds the OpenAPI 3.1 document from the route table. Schemas carrying an
 * `$id` become components and are referenced, so each type is described once.
 */
export function buildOpenApi(routes: AnyRoute[]): Json {
  const components: Record<string, unknown> = {};

  // The error bodies echo what the client sent (a `loc` may name a key with NUL): no input rule there.
  const ECHOES = new Set([ValidationErrorBody.$id, ErrorBody.$id]);
  const toJson = (schema: unknown, root = false, echo = false): unknown => {
    if (Array.isArray(schema)) return schema.map((s) => toJson(s, false, echo));
    if (!schema || typeof schema !== 'object') return schema;
    const s = schema as Json;
    if (typeof s.$id === 'string' && !root) {
      const id = s.$id;
      if (!(id in components)) {
        components[id] = {};
        components[id] = toJson(s, true, ECHOES.has(id));
      }
      return { $ref: `#/components/schemas/${id}` };
    }
    const out: Json = {};
    for (const [k, v] of Object.entries(s)) if (k !== '$id') out[k] = toJson(v, false, echo);
    if (echo) return out;
    // A free-form value (`Type.Unknown()`): any JSON value, under the input limits at every depth.
    if (FREE_FORM.has((s as { [Kind]?: string })[Kind] ?? '')) return { ...out, $ref: JSON_VALUE_REF };
    return withInputLimits(out);
  };
  const ref = (schema: TSchema) => toJson(schema);
  components.JsonValue = JSON_VALUE;

  const paths: Record<string, Json> = {};
  for (const r of routes) {
    const path = r.path.replace(/:([A-Za-z_]+)/g, '{$1}');
    const parameters: Json[] = [];
    for (const [where, schema] of [
      ['path', r.params],
      ['query', r.query],
    ] as const) {
      const props = (schema as { properties?: Record<string, TSchema> } | undefined)?.properties ?? {};
      const required = new Set((schema as { required?: string[] } | undefined)?.required ?? []);
      for (const [name, prop] of Object.entries(props)) {
        parameters.push({
          name,
          in: where,
          required: where === 'path' || (required.has(name) && !('default' in prop)),
          schema: ref(prop),
        });
      }
    }
    if (r.idempotent) {
      parameters.push({
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description:
          'Retrying with the same key and body replays the first response and creates nothing; the same key with another body is a 422; a retry while the first is still running is a 409. Keys are per user and expire after 24 hours.',
        schema: { type: 'string', minLength: 1, maxLength: 255 },
      });
    }
    const responses: Json = {};
    for (const [status, spec] of Object.entries(r.responses)) {
      responses[status] = spec.schema
        ? { description: spec.description, content: { 'application/json': { schema: ref(spec.schema) } } }
        : { description: spec.description };
    }
    if (r.params || r.query || r.body) {
      responses['422'] ??= {
        description: 'Validation error',
        content: { 'application/json': { schema: ref(ValidationErrorBody) } },
      };
    }
    if (r.auth === 'user') responses['401'] ??= { description: 'Missing, expired or invalid token' };
    // A query parameter that names a resource (`team_id`, `env_id`, …): it may not exist.
    const queryNames = Object.keys((r.query as { properties?: object } | undefined)?.properties ?? {});
    if (queryNames.some((n) => n.endsWith('_id'))) {
      responses['404'] ??= { description: 'A resource named in the query does not exist' };
    }
    for (const status of ['400', '403', '404', '409']) {
      const spec = responses[status] as Json | undefined;
      if (spec && !spec.content) spec.content = { 'application/json': { schema: ref(ErrorBody) } };
    }
    const op: Json = {
      operationId: `${r.method}_${r.path.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '')}`,
      summary: r.summary,
      tags: [r.tag],
      responses,
    };
    if (r.description) op.description = r.description;
    if (r.deprecated) op.deprecated = true;
    if (parameters.length) op.parameters = parameters;
    if (r.body) {
      const type = r.bodyEncoding === 'form' ? 'application/x-www-form-urlencoded' : 'application/json';
      // A body whose fields are all optional may be left out: the server reads it as `{}`.
      const documented = r.documentedBody ?? r.body;
      op.requestBody = {
        required: needsBody(documented),
        content: { [type]: { schema: ref(documented) } },
      };
    }
    if (r.auth === 'user') op.security = [{ bearer: [] }];
    (paths[path] ??= {})[r.method] = op;
  }

  return {
    openapi: '3.1.0',
    info: {
      title: 'Sluice',
      version: SLUICE_VERSION,
      description:
        'Control plane for change-data pipelines. See docs/api.md for the design choices. ' +
        `Every request is held to these limits before its own schema (422 at the location): no string ` +
        `or object key contains NUL (U+0000); arrays and objects nest at most ${MAX_JSON_DEPTH} levels; ` +
        'a method a path does not have answers 405 with `Allow`. PATCH bodies may carry the read-only ' +
        'fields of the read shape, which are ignored.',
    },
    // Spec conventions and 9.1: paths are relative to `{base_url}/api`.
    servers: [{ url: '/api' }],
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
        // Where the bearer token comes from (as FastAPI's OAuth2PasswordBearer says): a login, or an
        // organisation API key exchanged for a 10-minute token (spec 5.2, 5.6).
        password: {
          type: 'oauth2',
          description: 'The OAuth2 password form of POST /auth/jwt/login',
          flows: { password: { tokenUrl: '/api/auth/jwt/login', scopes: {} } },
        },
        apiKey: {
          type: 'oauth2',
          description: 'An organisation API key (psk_…) exchanged at POST /auth/api-key/token',
          flows: { clientCredentials: { tokenUrl: '/api/auth/api-key/token', scopes: {} } },
        },
      },
    },
  };
}
