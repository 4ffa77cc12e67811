import type { ErrorObject } from 'ajv';

// One translation of ajv's errors into the spec's 422 items ({loc, msg,
// type}), shared by the gateway's request validation and the connector
// configuration validation. Types follow pydantic's names, which clients of
// the spec's error shape already know.

/** `$id`s name OpenAPI components; ajv must not register them (the same one recurs across schemas). */
export function withoutIds(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(withoutIds);
  if (schema && typeof schema === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(schema)) if (k !== '$id') out[k] = withoutIds(v);
    return out;
  }
  return schema;
}

export const ISSUE_TYPES: Readonly<Record<string, string>> = {
  required: 'missing',
  dependentRequired: 'missing',
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
  maxProperties: 'too_long',
  uniqueItems: 'value_error',
};

export function issueType(e: ErrorObject): string {
  return e.keyword === 'type' ? `${String(e.params.type)}_type` : (ISSUE_TYPES[e.keyword] ?? 'value_error');
}

export function issueMessage(e: ErrorObject): string {
  switch (e.keyword) {
    case 'required':
      return 'Field required';
    case 'dependentRequired':
      return `Field required when '${String(e.params.property)}' is set`;
    case 'additionalProperties':
      return 'Extra inputs are not permitted';
    case 'format':
      return `Value is not a valid ${String(e.params.format)}`;
    case 'enum':
      return `Input should be one of: ${(e.params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    case 'type':
      return `Input should be of type ${String(e.params.type)}`;
    case 'minimum':
      return `Input should be greater than or equal to ${String(e.params.limit)}`;
    case 'maximum':
      return `Input should be less than or equal to ${String(e.params.limit)}`;
    default:
      return e.message ? e.message.charAt(0).toUpperCase() + e.message.slice(1) : 'Invalid value';
  }
}

/** A JSON Pointer (`/a/0/b~1c`) as a `loc` path: `['a', 0, 'b/c']`. */
export function instanceLoc(instancePath: string): (string | number)[] {
  return instancePath
    .split('/')
    .slice(1)
    .map((seg) => seg.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}
