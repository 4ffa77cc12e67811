// Validation of a whole mapper configuration before any message is touched.
// Issues follow the shape of a 422 body item ({loc, msg, type}, pydantic-style
// type names) with `loc` relative to the configuration: it starts with the
// rule index. Every issue is reported, not just the first.
import { parsePath } from './path.js';
import {
  CAST_TYPES,
  ENCRYPT_METHODS,
  ERROR_KEY,
  HASH_METHODS,
  RESERVED_KEYS,
  TEMPORAL_CASTS,
  type MapperRule,
} from './rule.js';
import { compileFormat } from './temporal.js';

export type MapperIssueLoc = (string | number)[];

export interface MapperIssue {
  loc: MapperIssueLoc;
  msg: string;
  type: string;
}

export class MapperConfigError extends Error {
  override readonly name = 'MapperConfigError';
  constructor(readonly issues: MapperIssue[]) {
    super(`Invalid mapper configuration: ${issues.map((i) => `[${i.loc.join('.')}] ${i.msg}`).join('; ')}`);
  }
}

type Issues = MapperIssue[];
type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
/** Optional fields accept null as "absent", as clients serialising optional values often send it. */
const given = (o: Obj, field: string): boolean => o[field] !== undefined && o[field] !== null;
const quoted = (values: readonly string[]): string => values.map((v) => `'${v}'`).join(', ');

const checkString = (o: Obj, field: string, loc: MapperIssueLoc, issues: Issues, minLength = 0): boolean => {
  const v = o[field];
  if (typeof v !== 'string') {
    issues.push({ loc: [...loc, field], msg: 'Input should be a valid string', type: 'string_type' });
    return false;
  }
  if (v.length < minLength) {
    issues.push({
      loc: [...loc, field],
      msg: 'String should have at least 1 character',
      type: 'string_too_short',
    });
    return false;
  }
  return true;
};

const checkEnum = (o: Obj, field: string, values: readonly string[], loc: MapperIssueLoc, issues: Issues) => {
  if (!given(o, field)) return;
  if (!values.includes(o[field] as string)) {
    issues.push({ loc: [...loc, field], msg: `Input should be ${quoted(values)}`, type: 'literal_error' });
  }
};

const checkPath = (o: Obj, loc: MapperIssueLoc, issues: Issues) => {
  if (!given(o, 'path') || !checkString(o, 'path', loc, issues)) return;
  const parsed = parsePath(o.path as string);
  if (!parsed.ok) issues.push({ loc: [...loc, 'path'], msg: parsed.msg, type: 'value_error' });
};

const checkUnknown = (o: Obj, known: readonly string[], loc: MapperIssueLoc, issues: Issues) => {
  for (const field of Object.keys(o)) {
    if (!known.includes(field)) {
      issues.push({ loc: [...loc, field], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' });
    }
  }
};

const ENTRY_FIELDS = ['path', 'static'] as const;
const RULE_FIELDS: readonly (keyof MapperRule)[] = [
  'key',
  'path',
  'static',
  'cast',
  'cast_format',
  'primary_key',
  'nullable',
  'concatenate_fields',
  'hash_method',
  'encrypt_method',
  'encrypt_key',
];

const hasPath = (o: Obj): boolean => given(o, 'path') && o.path !== '';

const checkConcatenate = (rule: Obj, loc: MapperIssueLoc, issues: Issues) => {
  const entries = rule.concatenate_fields;
  const at = [...loc, 'concatenate_fields'];
  if (!Array.isArray(entries)) {
    issues.push({ loc: at, msg: 'Input should be a valid list', type: 'list_type' });
    return;
  }
  if (entries.length === 0) {
    issues.push({ loc: at, msg: 'List should have at least 1 item', type: 'too_short' });
  }
  entries.forEach((entry: unknown, j) => {
    const eloc = [...at, j];
    if (!isObject(entry)) {
      issues.push({ loc: eloc, msg: 'Input should be a valid dictionary', type: 'dict_type' });
      return;
    }
    checkUnknown(entry, ENTRY_FIELDS, eloc, issues);
    checkPath(entry, eloc, issues);
    if (given(entry, 'static')) checkString(entry, 'static', eloc, issues);
    if (!hasPath(entry) && !given(entry, 'static')) {
      issues.push({ loc: eloc, msg: 'An entry needs a path or a static value', type: 'value_error' });
    }
  });
};

const checkRule = (rule: unknown, index: number, issues: Issues): void => {
  const loc = [index];
  if (!isObject(rule)) {
    issues.push({ loc, msg: 'Input should be a valid dictionary', type: 'dict_type' });
    return;
  }
  checkUnknown(rule, RULE_FIELDS, loc, issues);
  if (rule.key === undefined) issues.push({ loc: [index, 'key'], msg: 'Field required', type: 'missing' });
  else if (
    checkString(rule, 'key', loc, issues, 1) &&
    (RESERVED_KEYS as readonly unknown[]).includes(rule.key)
  ) {
    const msg =
      rule.key === ERROR_KEY
        ? `'${ERROR_KEY}' is reserved for the failures of a row`
        : `'${String(rule.key)}' cannot name a column`;
    issues.push({ loc: [index, 'key'], msg, type: 'value_error' });
  }
  checkPath(rule, loc, issues);
  for (const field of ['static', 'cast_format'] as const) {
    if (given(rule, field)) checkString(rule, field, loc, issues);
  }
  for (const field of ['primary_key', 'nullable'] as const) {
    if (given(rule, field) && typeof rule[field] !== 'boolean') {
      issues.push({ loc: [index, field], msg: 'Input should be a valid boolean', type: 'bool_type' });
    }
  }
  checkEnum(rule, 'cast', CAST_TYPES, loc, issues);
  checkEnum(rule, 'hash_method', HASH_METHODS, loc, issues);
  checkEnum(rule, 'encrypt_method', ENCRYPT_METHODS, loc, issues);
  if (given(rule, 'concatenate_fields')) checkConcatenate(rule, loc, issues);
  if (!hasPath(rule) && !given(rule, 'static') && !given(rule, 'concatenate_fields')) {
    const msg = 'A rule needs a path, a static value or concatenate_fields';
    issues.push({ loc, msg, type: 'value_error' });
  }

  if (given(rule, 'encrypt_method') && !given(rule, 'encrypt_key')) {
    issues.push({
      loc: [index, 'encrypt_key'],
      msg: 'Field required when encrypt_method is set',
      type: 'missing',
    });
  }
  if (given(rule, 'encrypt_key')) {
    if (checkString(rule, 'encrypt_key', loc, issues, 1) && !given(rule, 'encrypt_method')) {
      // A key without a method would look like encryption while writing plaintext.
      const msg = 'encrypt_key is set but encrypt_method is not: the column would not be encrypted';
      issues.push({ loc: [index, 'encrypt_method'], msg, type: 'missing' });
    }
  }

  if (given(rule, 'cast_format') && typeof rule.cast_format === 'string') {
    if (!(TEMPORAL_CASTS as readonly unknown[]).includes(rule.cast)) {
      const msg = `cast_format only applies to the casts ${quoted(TEMPORAL_CASTS)}`;
      issues.push({ loc: [index, 'cast_format'], msg, type: 'value_error' });
    } else {
      const format = compileFormat(rule.cast_format);
      if (!format.ok) issues.push({ loc: [index, 'cast_format'], msg: format.msg, type: 'value_error' });
    }
  }
};

/** All the issues of a configuration; an empty list means compileMapper will accept it. */
export const validateMapperConfig = (config: unknown): MapperIssue[] => {
  if (!Array.isArray(config)) return [{ loc: [], msg: 'Input should be a valid list', type: 'list_type' }];
  const issues: Issues = [];
  const firstIndexOfKey = new Map<string, number>();
  config.forEach((rule: unknown, index) => {
    checkRule(rule, index, issues);
    const key = isObject(rule) ? rule.key : undefined;
    if (typeof key !== 'string') return;
    const first = firstIndexOfKey.get(key);
    if (first === undefined) firstIndexOfKey.set(key, index);
    else
      issues.push({
        loc: [index, 'key'],
        msg: `Duplicate key '${key}' (also rule ${first})`,
        type: 'value_error',
      });
  });
  return issues;
};

/** Throws MapperConfigError with every issue, or returns the configuration typed as rules. */
export const assertMapperConfig = (config: unknown): MapperRule[] => {
  const issues = validateMapperConfig(config);
  if (issues.length > 0) throw new MapperConfigError(issues);
  return config as MapperRule[];
};

// --- Rule 13 ------------------------------------------------------------------

/** True when at least one rule is part of the primary key. */
export const hasPrimaryKey = (rules: readonly MapperRule[]): boolean =>
  rules.some((r) => r.primary_key === true);

/**
 * For targets that write database tables (rule 13): they upsert on the primary
 * key, so a rule set without one is rejected. The issue's loc is [] (the whole
 * configuration); callers prefix it, e.g. ['body', 'mapper_config'].
 */
export const assertPrimaryKeyForTableTarget = (rules: readonly MapperRule[]): void => {
  if (!hasPrimaryKey(rules)) {
    throw new MapperConfigError([
      {
        loc: [],
        msg: 'A target that writes database tables needs at least one rule with primary_key true',
        type: 'value_error',
      },
    ]);
  }
};
