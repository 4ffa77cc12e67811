import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { ValidationIssue } from './errors.js';

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

export type Source = 'body' | 'query' | 'path' | 'header';

// Bodies are JSON: no coercion. Query strings and path segments are text, so
// those are coerced ("2" → 2) the way users of a REST API expect.
const strict = addFormats(new Ajv({ allErrors: true, useDefaults: true, strict: false }));
const coercing = addFormats(
  new Ajv({ allErrors: true, useDefaults: true, coerceTypes: true, strict: false }),
);
const cache = new WeakMap<TSchema, { strict?: ValidateFunction; coercing?: ValidateFunction }>();

/** `$id`s name OpenAPI components; ajv must not register them globally. */
function withoutIds(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutIds);
  if (schema && typeof schema === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(schema)) if (k !== '$id') out[k] = withoutIds(v);
    return out;
  }
  return schema;
}

function compiled(schema: TSchema, coerce: boolean): ValidateFunction {
  let entry = cache.get(schema);
  if (!entry) cache.set(schema, (entry = {}));
  const slot = coerce ? 'coercing' : 'strict';
  return (entry[slot] ??= (coerce ? coercing : strict).compile(withoutIds(schema) as object));
}

const typeNames: Record<string, string> = {
  required: 'missing',
  additionalProperties: 'extra_forbidden',
  format: 'value_error',
  minLength: 'string_too_short',
  maxLength: 'string_too_long',
  pattern: 'string_pattern_mismatch',
  enum: 'enum',
  const: 'literal_error',
  minimum: 'greater_than_equal',
  maximum: 'less_than_equal',
  minItems: 'too_short',
  maxItems: 'too_long',
  uniqueItems: 'value_error',
};

function message(e: ErrorObject): string {
  switch (e.keyword) {
    case 'required':
      return 'Field required';
    case 'additionalProperties':
      return 'Extra inputs are not permitted';
    case 'format':
      return `Value is not a valid ${String(e.params.format)}`;
    case 'enum':
      return `Input should be one of: ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'type':
      return `Input should be of type ${String(e.params.type)}`;
    default:
      return e.message ? e.message.charAt(0).toUpperCase() + e.message.slice(1) : 'Invalid value';
  }
}

/** Turns ajv's errors into spec-shaped issues, one per problem a user can fix. */
export function toIssues(errors: ErrorObject[], source: Source): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  // In `X | null` unions ajv reports both branches; the null branch says nothing useful.
  const paths = new Map<string, ErrorObject[]>();
  for (const e of errors) {
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf') continue;
    const list = paths.get(e.instancePath) ?? [];
    list.push(e);
    paths.set(e.instancePath, list);
  }
  for (const list of paths.values()) {
    const useful = list.filter((e) => !(e.keyword === 'type' && e.params.type === 'null'));
    for (const e of useful.length ? useful : list) {
      const loc: (string | number)[] = [source];
      for (const seg of e.instancePath.split('/').slice(1)) {
        const s = seg.replace(/~1/g, '/').replace(/~0/g, '~');
        loc.push(/^\d+$/.test(s) ? Number(s) : s);
      }
      if (e.keyword === 'required') loc.push(String(e.params.missingProperty));
      if (e.keyword === 'additionalProperties') loc.push(String(e.params.additionalProperty));
      const type =
        e.keyword === 'type' ? `${String(e.params.type)}_type` : (typeNames[e.keyword] ?? 'value_error');
      const key = JSON.stringify(loc) + type;
      if (seen.has(key)) continue;
      seen.add(key);
      issues.push({ loc, msg: message(e), type });
    }
  }
  return issues;
}

/** Validates (and, for query/path, coerces and defaults) `data` in place. */
export function check(schema: TSchema, data: unknown, source: Source): ValidationIssue[] {
  const validate = compiled(schema, source !== 'body');
  return validate(data) ? [] : toIssues(validate.errors ?? [], source);
}
