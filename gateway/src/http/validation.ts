import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { instanceLoc, issueMessage, issueType, withoutIds } from '@sluice/shared/validation';
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
/**
 * `x-aliases: {alias: name}` on an object schema: a field sent under its alias
 * is moved to its name, so the handler sees one name (the schema accepts
 * either, and says which is which).
 */
for (const ajv of [strict, coercing]) {
  ajv.addKeyword({
    keyword: 'x-aliases',
    schemaType: 'object',
    modifying: true,
    validate: (aliases: Record<string, string>, data: unknown) => {
      if (data && typeof data === 'object' && !Array.isArray(data)) {
        const o = data as Record<string, unknown>;
        for (const [alias, name] of Object.entries(aliases)) {
          if (alias in o && !(name in o)) {
            o[name] = o[alias];
            delete o[alias];
          }
        }
      }
      return true;
    },
  });
}
const cache = new WeakMap<TSchema, { strict?: ValidateFunction; coercing?: ValidateFunction }>();

function compiled(schema: TSchema, coerce: boolean): ValidateFunction {
  let entry = cache.get(schema);
  if (!entry) cache.set(schema, (entry = {}));
  const slot = coerce ? 'coercing' : 'strict';
  return (entry[slot] ??= (coerce ? coercing : strict).compile(withoutIds(schema) as object));
}

/** Turns ajv's errors into spec-shaped issues, one per problem a user can fix. */
export function toIssues(errors: ErrorObject[], source: Source): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const seen = new Set<string>();
  // In `X | null` unions ajv reports both branches; the null branch says nothing useful.
  const paths = new Map<string, ErrorObject[]>();
  for (const e of errors) {
    // `if`/`then`: the `then` branch's own errors say what is missing.
    if (e.keyword === 'anyOf' || e.keyword === 'oneOf' || e.keyword === 'if') continue;
    const list = paths.get(e.instancePath) ?? [];
    list.push(e);
    paths.set(e.instancePath, list);
  }
  for (const list of paths.values()) {
    const useful = list.filter((e) => !(e.keyword === 'type' && e.params.type === 'null'));
    for (const e of useful.length ? useful : list) {
      const loc: (string | number)[] = [source, ...instanceLoc(e.instancePath)];
      if (e.keyword === 'required') loc.push(String(e.params.missingProperty));
      if (e.keyword === 'additionalProperties') loc.push(String(e.params.additionalProperty));
      const type = issueType(e);
      const key = JSON.stringify(loc) + type;
      if (seen.has(key)) continue;
      seen.add(key);
      issues.push({ loc, msg: issueMessage(e), type });
    }
  }
  return issues;
}

/** Validates (and, for query/path, coerces and defaults) `data` in place. */
export function check(schema: TSchema, data: unknown, source: Source): ValidationIssue[] {
  const validate = compiled(schema, source !== 'body');
  return validate(data) ? [] : toIssues(validate.errors ?? [], source);
}
