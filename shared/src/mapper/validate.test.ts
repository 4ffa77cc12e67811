import { describe, expect, it } from '@jest/globals';
import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import {
  assertPrimaryKeyForTableTarget,
  compileMapper,
  hasPrimaryKey,
  MapperConfigError,
  mapperConfigSchema,
  mapperRuleSchema,
  validateMapperConfig,
  type MapperIssue,
} from './index.js';

const issuesOf = (config: unknown): MapperIssue[] => {
  try {
    compileMapper(config);
  } catch (e) {
    if (e instanceof MapperConfigError) return e.issues;
    throw e;
  }
  throw new Error('compileMapper accepted the configuration');
};

const ok = { key: 'id', path: 'id' };

describe('configuration validation', () => {
  it.each<[string, unknown, MapperIssue]>([
    ['not a list', { key: 'a' }, { loc: [], msg: 'Input should be a valid list', type: 'list_type' }],
    [
      'a rule that is not an object',
      [ok, 'x'],
      { loc: [1], msg: 'Input should be a valid dictionary', type: 'dict_type' },
    ],
    ['a rule without key', [ok, { path: 'a' }], { loc: [1, 'key'], msg: 'Field required', type: 'missing' }],
    [
      'a key that is not a string',
      [{ key: 3, path: 'a' }],
      { loc: [0, 'key'], msg: 'Input should be a valid string', type: 'string_type' },
    ],
    [
      'an empty key',
      [{ key: '', path: 'a' }],
      { loc: [0, 'key'], msg: 'String should have at least 1 character', type: 'string_too_short' },
    ],
    [
      'the reserved key error',
      [{ key: 'error', path: 'a' }],
      { loc: [0, 'key'], msg: "'error' is reserved for the failures of a row", type: 'value_error' },
    ],
    [
      '__proto__ as a key',
      [{ key: '__proto__', path: 'a' }],
      { loc: [0, 'key'], msg: "'__proto__' cannot name a column", type: 'value_error' },
    ],
    [
      'two rules with the same key',
      [ok, { key: 'x', path: 'x' }, { key: 'id', path: 'b' }],
      { loc: [2, 'key'], msg: "Duplicate key 'id' (also rule 0)", type: 'value_error' },
    ],
    [
      'an unknown cast',
      [ok, { key: 'a', path: 'a', cast: 'integer' }],
      {
        loc: [1, 'cast'],
        msg: "Input should be 'string', 'int', 'float', 'bool', 'date', 'datetime', 'time'",
        type: 'literal_error',
      },
    ],
    [
      'an unknown hash',
      [{ key: 'a', path: 'a', hash_method: 'sha1' }],
      { loc: [0, 'hash_method'], msg: "Input should be 'md5', 'sha256', 'sha512'", type: 'literal_error' },
    ],
    [
      'an unknown encryption',
      [{ key: 'a', path: 'a', encrypt_method: 'aes-128-cbc', encrypt_key: 'k' }],
      { loc: [0, 'encrypt_method'], msg: "Input should be 'aes-256-gcm'", type: 'literal_error' },
    ],
    [
      'encrypt without encrypt_key',
      [{ key: 'a', path: 'a', encrypt_method: 'aes-256-gcm' }],
      { loc: [0, 'encrypt_key'], msg: 'Field required when encrypt_method is set', type: 'missing' },
    ],
    [
      'an empty encrypt_key',
      [{ key: 'a', path: 'a', encrypt_method: 'aes-256-gcm', encrypt_key: '' }],
      { loc: [0, 'encrypt_key'], msg: 'String should have at least 1 character', type: 'string_too_short' },
    ],
    [
      'encrypt_key without encrypt_method',
      [{ key: 'a', path: 'a', encrypt_key: 'k' }],
      {
        loc: [0, 'encrypt_method'],
        msg: 'encrypt_key is set but encrypt_method is not: the column would not be encrypted',
        type: 'missing',
      },
    ],
    [
      'cast_format on a non-temporal cast',
      [{ key: 'a', path: 'a', cast: 'int', cast_format: '%Y' }],
      {
        loc: [0, 'cast_format'],
        msg: "cast_format only applies to the casts 'date', 'datetime', 'time'",
        type: 'value_error',
      },
    ],
    [
      'cast_format without cast',
      [{ key: 'a', path: 'a', cast_format: '%Y' }],
      {
        loc: [0, 'cast_format'],
        msg: "cast_format only applies to the casts 'date', 'datetime', 'time'",
        type: 'value_error',
      },
    ],
    [
      'an unknown directive',
      [{ key: 'a', path: 'a', cast: 'date', cast_format: '%Y-%Q' }],
      {
        loc: [0, 'cast_format'],
        msg: expect.stringContaining("unknown directive '%Q'") as unknown as string,
        type: 'value_error',
      },
    ],
    [
      'a repeated directive',
      [{ key: 'a', path: 'a', cast: 'date', cast_format: '%Y %Y' }],
      { loc: [0, 'cast_format'], msg: "Invalid cast_format: '%Y' appears twice", type: 'value_error' },
    ],
    [
      'an unknown property',
      [{ key: 'a', path: 'a', cast_fromat: '%Y' }],
      { loc: [0, 'cast_fromat'], msg: 'Extra inputs are not permitted', type: 'extra_forbidden' },
    ],
    [
      'neither path, static nor concatenation',
      [{ key: 'a', path: '' }],
      { loc: [0], msg: 'A rule needs a path, a static value or concatenate_fields', type: 'value_error' },
    ],
    [
      'an empty pipe segment',
      [{ key: 'a', path: 'a||b' }],
      {
        loc: [0, 'path'],
        msg: "Invalid path 'a||b': empty segment (two pipes in a row, or a pipe at an end)",
        type: 'value_error',
      },
    ],
    [
      'a bad dollar path',
      [{ key: 'a', path: '$..a' }],
      {
        loc: [0, 'path'],
        msg: "Invalid path '$..a': cannot read '..a' at offset 1 (recursive descent is not supported)",
        type: 'value_error',
      },
    ],
    [
      'a non-boolean nullable',
      [{ key: 'a', path: 'a', nullable: 'no' }],
      { loc: [0, 'nullable'], msg: 'Input should be a valid boolean', type: 'bool_type' },
    ],
    [
      'a non-string static',
      [{ key: 'a', static: 5 }],
      { loc: [0, 'static'], msg: 'Input should be a valid string', type: 'string_type' },
    ],
    [
      'concatenate_fields not a list',
      [{ key: 'a', concatenate_fields: { path: 'a' } }],
      { loc: [0, 'concatenate_fields'], msg: 'Input should be a valid list', type: 'list_type' },
    ],
    [
      'empty concatenate_fields',
      [{ key: 'a', concatenate_fields: [] }],
      { loc: [0, 'concatenate_fields'], msg: 'List should have at least 1 item', type: 'too_short' },
    ],
    [
      'an empty concatenation entry',
      [{ key: 'a', concatenate_fields: [{ path: 'a' }, {}] }],
      {
        loc: [0, 'concatenate_fields', 1],
        msg: 'An entry needs a path or a static value',
        type: 'value_error',
      },
    ],
    [
      'a bad path in an entry',
      [{ key: 'a', concatenate_fields: [{ path: 'a|' }] }],
      {
        loc: [0, 'concatenate_fields', 0, 'path'],
        msg: "Invalid path 'a|': empty segment (two pipes in a row, or a pipe at an end)",
        type: 'value_error',
      },
    ],
  ])('rejects %s', (_, config, issue) => {
    expect(issuesOf(config)).toContainEqual(issue);
  });

  it('reports every issue of every rule at once, in rule order', () => {
    const issues = issuesOf([
      { path: 'a', cast: 'nope' },
      ok,
      { key: 'id', path: 'b', encrypt_method: 'aes-256-gcm' },
    ]);
    expect(issues.map((i) => i.loc)).toEqual([
      [0, 'key'],
      [0, 'cast'],
      [2, 'encrypt_key'],
      [2, 'key'],
    ]);
  });

  it('names the issues in the error message', () => {
    expect(() => compileMapper([{ key: 'a' }])).toThrow(
      'Invalid mapper configuration: [0] A rule needs a path, a static value or concatenate_fields',
    );
    expect(issuesOf([{ key: 'a' }])).toHaveLength(1);
  });

  it('accepts null for optional fields and an empty static literal', () => {
    expect(
      validateMapperConfig([
        { key: 'a', path: 'a', cast: null, hash_method: null, encrypt_key: null, nullable: null },
        { key: 'b', static: '' },
      ]),
    ).toEqual([]);
  });
});

describe('primary key check (rule 13)', () => {
  it('passes when one rule is part of the primary key', () => {
    const rules = [ok, { key: 'pk', path: 'pk', primary_key: true }];
    expect(hasPrimaryKey(rules)).toBe(true);
    expect(() => assertPrimaryKeyForTableTarget(rules)).not.toThrow();
  });

  it('rejects a rule set without one, at loc []', () => {
    const rules = [{ ...ok, primary_key: false }];
    expect(hasPrimaryKey(rules)).toBe(false);
    expect(() => assertPrimaryKeyForTableTarget(rules)).toThrow(MapperConfigError);
    try {
      assertPrimaryKeyForTableTarget(rules);
    } catch (e) {
      expect((e as MapperConfigError).issues).toEqual([
        {
          loc: [],
          msg: 'A target that writes database tables needs at least one rule with primary_key true',
          type: 'value_error',
        },
      ]);
    }
  });
});

// Rules built mostly from valid field values with the odd typical mistake,
// so that both accepted and rejected rules come up often.
const field = <T>(valid: T[], invalid: unknown[]) =>
  fc.oneof(
    { weight: 6, arbitrary: fc.constantFrom(...valid) },
    { weight: 1, arbitrary: fc.constantFrom(...invalid) },
  );
const ruleArb = fc
  .tuple(
    fc.record(
      {
        key: field(['a'], ['', 'error', 7]),
        path: field(['a|b', 'x|*|y', '$.a[0]', null], ['', 3]),
        static: field(['s', '', null], [4]),
        cast: field(['int', 'date', 'time', null], ['integer']),
        cast_format: field(['%Y-%m-%d', '%H:%M', null], [5]),
        primary_key: field([true, false, null], ['yes']),
        nullable: field([true, false, null], [0]),
        concatenate_fields: field(
          [[{ path: 'a' }], [{ static: '-' }, { path: 'b' }], null],
          [[], [{}], [{ other: 'x' }], 'a'],
        ),
        hash_method: field(['md5', 'sha512', null], ['sha1']),
        encrypt_method: field(['aes-256-gcm', null], ['rot13']),
        encrypt_key: field(['k', null], ['']),
      },
      { requiredKeys: ['key'] },
    ),
    fc.nat(20),
  )
  .map(([rule, n]) => (n === 0 ? { ...rule, extra: 'x' } : rule));

describe('JSON Schema of a rule', () => {
  // The schema is published (OpenAPI, ajv in the gateway); it must accept a
  // rule exactly when the validator does, for everything a schema can express.
  it.each([
    ['draft-07 (Ajv)', new Ajv({ strict: false })],
    ['2020-12 (Ajv2020)', new Ajv2020({ strict: false })],
  ])('agrees with the validator under %s', (_, ajv) => {
    const schemaAccepts = ajv.compile(mapperRuleSchema);
    fc.assert(
      fc.property(ruleArb, (rule) => {
        expect(schemaAccepts(rule)).toBe(validateMapperConfig([rule]).length === 0);
      }),
      { numRuns: 3000 },
    );
  });

  it('validates an array of rules, leaving duplicate keys to the validator', () => {
    const accepts = new Ajv2020({ strict: false }).compile(mapperConfigSchema);
    expect(accepts([ok, { key: 'h', path: 'x', hash_method: 'md5' }])).toBe(true);
    expect(accepts([ok, { key: 'h', path: 'x', hash_method: 'sha1' }])).toBe(false);
    expect(accepts([ok, ok])).toBe(true);
    expect(validateMapperConfig([ok, ok])).toHaveLength(1);
  });
});
