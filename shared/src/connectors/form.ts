import { Type, type Static } from '@sinclair/typebox';
import { CONNECTOR_TYPE_IDS, requireConnectorType, type ConnectorTypeDef } from './registry.js';
import { isSecretMapSchema, isSecretSchema } from './secret.js';

// The form fields of `GET /connector-types/`, derived from the configuration
// schemas: the schema is the one definition of a field.

const Scalar = Type.Union([Type.String(), Type.Number(), Type.Boolean()]);

export const FormFieldCondition = Type.Object(
  {
    field: Type.String(),
    values: Type.Optional(
      Type.Array(Scalar, { description: 'Required when `field` has one of these values' }),
    ),
  },
  {
    $id: 'FormFieldCondition',
    additionalProperties: false,
    description: 'The field becomes required when `field` is set (no `values`) or has one of `values`',
  },
);
export type FormFieldCondition = Static<typeof FormFieldCondition>;

export const FORM_FIELD_TYPES = ['string', 'integer', 'number', 'boolean', 'array', 'object'] as const;

export const FormField = Type.Object(
  {
    name: Type.String({ description: 'Key in json_configuration' }),
    title: Type.String(),
    type: Type.Union(
      FORM_FIELD_TYPES.map((t) => Type.Literal(t)),
      {
        description: 'JSON type of the (inline) value',
      },
    ),
    required: Type.Boolean(),
    secret: Type.Boolean({
      description:
        'Accepts an inline value or {valueFrom: {secretKeyRef: {name, key}}}; read back as <redacted>',
    }),
    enum: Type.Optional(Type.Array(Scalar)),
    default: Type.Optional(Type.Unknown()),
    description: Type.Optional(Type.String()),
    format: Type.Optional(Type.String()),
    pattern: Type.Optional(Type.String()),
    minimum: Type.Optional(Type.Number()),
    maximum: Type.Optional(Type.Number()),
    items: Type.Optional(
      Type.Object(
        { type: Type.String(), pattern: Type.Optional(Type.String()), format: Type.Optional(Type.String()) },
        { additionalProperties: false, description: 'Element of an array field' },
      ),
    ),
    required_when: Type.Optional(Type.Array(FormFieldCondition)),
  },
  { $id: 'ConnectorFormField', additionalProperties: false },
);
export type FormField = Static<typeof FormField>;

export const ConnectorTypeRead = Type.Object(
  {
    type: Type.Union(CONNECTOR_TYPE_IDS.map((t) => Type.Literal(t))),
    direction: Type.Union([Type.Literal('source'), Type.Literal('target'), Type.Literal('job')]),
    title: Type.String(),
    description: Type.String(),
    cdc: Type.Boolean({ description: 'A change-data-capture source: an empty capture list is refused' }),
    topics_config_key: Type.Union([Type.Literal('whitelist'), Type.Literal('topic'), Type.Null()], {
      description: 'Key of json_configuration holding the capture list',
    }),
    segment: Type.String({ description: 'Path segment of the pre-flight calls' }),
    preflight_actions: Type.Array(Type.String()),
    fields: Type.Array(FormField),
    json_schema: Type.Record(Type.String(), Type.Unknown(), {
      description: 'JSON Schema of json_configuration',
    }),
  },
  { $id: 'ConnectorTypeRead', additionalProperties: false },
);
export type ConnectorTypeRead = Static<typeof ConnectorTypeRead>;
export const ConnectorTypeList = Type.Array(ConnectorTypeRead, { $id: 'ConnectorTypeList' });

type Json = Record<string, unknown>;

/** Conditions under which each field becomes required (`if`/`then` and `dependentRequired`). */
function conditions(schema: Json): Map<string, FormFieldCondition[]> {
  const out = new Map<string, FormFieldCondition[]>();
  const add = (name: string, c: FormFieldCondition) => out.set(name, [...(out.get(name) ?? []), c]);
  for (const rule of (schema.allOf as Json[] | undefined) ?? []) {
    const cond = (rule.if as Json | undefined)?.properties as Record<string, Json> | undefined;
    const then = (rule.then as Json | undefined)?.required as string[] | undefined;
    if (!cond || !then) continue;
    for (const [field, test] of Object.entries(cond)) {
      const values =
        (test.enum as (string | number | boolean)[] | undefined) ??
        ('const' in test ? [test.const as string] : undefined);
      for (const name of then) add(name, values ? { field, values } : { field });
    }
  }
  for (const [field, deps] of Object.entries(
    (schema.dependentRequired as Record<string, string[]> | undefined) ?? {},
  )) {
    for (const name of deps) add(name, { field });
  }
  return out;
}

function fieldOf(
  name: string,
  prop: Json,
  required: boolean,
  when: FormFieldCondition[] | undefined,
): FormField {
  const secret = isSecretSchema(prop);
  // A secret field is a union; its inline branch says what to type in.
  const value = secret ? (((prop.anyOf as Json[] | undefined) ?? [])[0] ?? { type: 'string' }) : prop;
  const field: FormField = {
    name,
    title: typeof prop.title === 'string' ? prop.title : name,
    type: (value.type as FormField['type'] | undefined) ?? 'string',
    required,
    // A map of secrets (headers) is typed in as secrets too.
    secret: secret || isSecretMapSchema(prop),
  };
  if (Array.isArray(value.enum)) field.enum = value.enum as FormField['enum'];
  if ('default' in prop) field.default = prop.default;
  if (typeof prop.description === 'string') field.description = prop.description;
  if (typeof value.format === 'string') field.format = value.format;
  if (typeof value.pattern === 'string') field.pattern = value.pattern;
  if (typeof value.minimum === 'number') field.minimum = value.minimum;
  if (typeof value.maximum === 'number') field.maximum = value.maximum;
  const items = value.items as Json | undefined;
  if (items && typeof items.type === 'string') {
    field.items = { type: items.type };
    if (typeof items.pattern === 'string') field.items.pattern = items.pattern;
    if (typeof items.format === 'string') field.items.format = items.format;
  }
  if (when?.length) field.required_when = when;
  return field;
}

/** The form fields of a type, in the schema's order. */
export function formFields(type: string): FormField[] {
  const schema = requireConnectorType(type).schema as unknown as Json;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const when = conditions(schema);
  return Object.entries(schema.properties as Record<string, Json>).map(([name, prop]) =>
    fieldOf(name, prop, required.has(name), when.get(name)),
  );
}

/** What `GET /connector-types/` shows of one type. */
export function connectorTypeRead(def: ConnectorTypeDef): ConnectorTypeRead {
  return {
    type: def.type,
    direction: def.direction,
    title: def.title,
    description: def.description,
    cdc: def.cdc,
    topics_config_key: def.topics_config_key,
    segment: def.segment,
    preflight_actions: [...def.preflight],
    fields: formFields(def.type),
    json_schema: JSON.parse(JSON.stringify(def.schema)) as Record<string, unknown>,
  };
}
