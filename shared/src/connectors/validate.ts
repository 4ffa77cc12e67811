import { Ajv2020 as Ajv, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { requireConnectorType, type ConnectorTypeDef } from './registry.js';
import { isSecretMapSchema, isSecretSchema, SECRET_KEYWORD } from './secret.js';
import { instanceLoc, issueMessage, issueType, withoutIds } from '../validation/ajv-issues.js';

// ajv-formats is CommonJS with a default export.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** One problem of a configuration, shaped like a 422 body item; `loc` is relative to `json_configuration`. */
export interface ConnectorConfigIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

// JSON Schema 2020-12 (the dialect of OpenAPI 3.1; it has `dependentRequired`).
// Strict mode catches misspelt keywords in the schemas; `x-secret` is ours.
const options = {
  allErrors: true,
  verbose: true,
  strict: true,
  strictRequired: false,
  strictTypes: false,
} as const;
const checker = addFormats(new Ajv(options));
const defaulter = addFormats(new Ajv({ ...options, allErrors: false, useDefaults: true }));
for (const ajv of [checker, defaulter]) ajv.addKeyword({ keyword: SECRET_KEYWORD, schemaType: 'boolean' });

const compiledChecks = new Map<string, ValidateFunction>();
const compiledDefaults = new Map<string, ValidateFunction>();
function compiled(def: ConnectorTypeDef, ajv: Ajv, cache: Map<string, ValidateFunction>): ValidateFunction {
  let fn = cache.get(def.type);
  if (!fn) cache.set(def.type, (fn = ajv.compile(withoutIds(def.schema) as object)));
  return fn;
}

/** Compiles the schema of a type (throws on a schema ajv refuses); for tests and start-up checks. */
export function compileConnectorSchema(type: string): ValidateFunction {
  return compiled(requireConnectorType(type), checker, compiledChecks);
}

const SECRET_SHAPE = 'a string or a secret reference {"valueFrom": {"secretKeyRef": {"name": …, "key": …}}}';

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * ajv's errors → issues a user can act on: a secret field reports the branch
 * its value aimed at (inline string or reference), conditional requirements
 * say which value made the field required.
 */
function toIssues(def: ConnectorTypeDef, errors: ErrorObject[]): ConnectorConfigIssue[] {
  const issues: ConnectorConfigIssue[] = [];
  const dropped = new Set<ErrorObject>();
  for (const e of errors) {
    if (e.keyword !== 'anyOf') continue;
    dropped.add(e);
    const branch = (i: number) => `${e.schemaPath}/${i}/`;
    const inside = errors.filter((x) => x !== e && x.schemaPath.startsWith(`${e.schemaPath}/`));
    let keep: string | undefined;
    if (isSecretSchema(e.parentSchema)) {
      if (typeof e.data === 'string') keep = branch(0);
      else if (isPlainObject(e.data)) keep = branch(1);
    }
    for (const x of inside) if (!keep || !x.schemaPath.startsWith(keep)) dropped.add(x);
    if (!keep) {
      issues.push({
        loc: instanceLoc(e.instancePath),
        msg: isSecretSchema(e.parentSchema)
          ? `Input should be ${SECRET_SHAPE}`
          : 'Input matches none of the allowed shapes',
        type: isSecretSchema(e.parentSchema) ? 'string_type' : 'value_error',
      });
    }
  }
  const seen = new Set<string>();
  for (const e of errors) {
    if (dropped.has(e) || e.keyword === 'if') continue;
    const loc = instanceLoc(e.instancePath);
    let msg = issueMessage(e);
    if (e.keyword === 'required' || e.keyword === 'dependentRequired')
      loc.push(String(e.params.missingProperty));
    if (e.keyword === 'additionalProperties') loc.push(String(e.params.additionalProperty));
    if (e.keyword === 'required' && e.schemaPath.endsWith('/then/required')) {
      const rule = errors.find(
        (x) => x.keyword === 'if' && x.schemaPath === e.schemaPath.replace(/\/then\/required$/, '/if'),
      );
      const cond = (rule?.parentSchema as { if?: { properties?: Record<string, unknown> } } | undefined)?.if
        ?.properties;
      const field = cond ? Object.keys(cond)[0] : undefined;
      if (field) {
        const value = isPlainObject(rule?.data) ? rule.data[field] : undefined;
        const fallback = (def.schema.properties[field] as { default?: unknown } | undefined)?.default;
        msg =
          value !== undefined
            ? `Field required when '${field}' is ${JSON.stringify(value)}`
            : `Field required when '${field}' is ${JSON.stringify(fallback)} (the default)`;
      }
    }
    const type = issueType(e);
    const key = JSON.stringify(loc) + type;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push({ loc, msg, type });
  }
  return issues;
}

/**
 * Checks a `json_configuration` against its type's schema; every problem is
 * reported. Throws `UnknownConnectorTypeError` for an unknown type. Does not
 * change `config`.
 */
export function validateConnectorConfig(type: string, config: unknown): ConnectorConfigIssue[] {
  const def = requireConnectorType(type);
  const validate = compiled(def, checker, compiledChecks);
  return validate(config) ? [] : toIssues(def, validate.errors ?? []);
}

/** A copy of `config` with the schema's defaults filled in (ports, SSL modes, …). */
export function withConnectorDefaults<T>(type: string, config: T): T {
  const copy = structuredClone(config);
  compiled(requireConnectorType(type), defaulter, compiledDefaults)(copy);
  return copy;
}

/**
 * The secret fields of a type's configuration (spec 2.14): their names, and
 * `name.*` for a map whose values are each a secret (WEBHOOK_TARGET's
 * `headers`); `secretSlots` of shared/secrets walks both.
 */
export function secretPaths(type: string): string[] {
  const props = requireConnectorType(type).schema.properties as Record<string, unknown>;
  return Object.entries(props).flatMap(([name, schema]) => {
    if (isSecretSchema(schema)) return [name];
    if (isSecretMapSchema(schema)) return [`${name}.*`];
    return [];
  });
}
