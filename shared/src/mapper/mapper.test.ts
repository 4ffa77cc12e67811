import { createHash } from 'node:crypto';
import { describe, expect, it, jest } from '@jest/globals';
import fc from 'fast-check';
import {
  compileMapper,
  MapperConfigError,
  processMapper,
  validateMapperConfig,
  type MapperRule,
} from './index.js';
import { dedupe } from './expand.js';

const jestFn = () => jest.fn();
const map = (config: MapperRule[], message: unknown) => compileMapper(config).apply(message);

describe('reading values', () => {
  it('does not read inherited properties of objects and arrays', () => {
    const rows = map(
      [
        { key: 'c', path: 'o|constructor' },
        { key: 'p', path: 'o|__proto__' },
        { key: 'l', path: 'arr|length' },
        { key: 's', path: 'str|0' },
      ],
      { o: {}, arr: [1, 2], str: 'abc' },
    );
    expect(rows).toEqual([{ c: null, p: null, l: null, s: null }]);
  });

  it('reads own properties that carry inherited names', () => {
    expect(map([{ key: 'c', path: 'constructor' }], JSON.parse('{"constructor":"x"}'))).toEqual([{ c: 'x' }]);
  });

  it('writes objects and arrays as read when there is no cast', () => {
    expect(map([{ key: 'o', path: 'o' }], { o: { a: [1] } })).toEqual([{ o: { a: [1] } }]);
  });

  it('reads the whole message with $', () => {
    expect(map([{ key: 'm', path: '$', cast: 'string' }], { a: 1 })).toEqual([{ m: '{"a":1}' }]);
  });

  it('reads the same path once for several rules', () => {
    let reads = 0;
    const message = {
      get a() {
        reads++;
        return 'x';
      },
    };
    map(
      [
        { key: 'x', path: 'a' },
        { key: 'y', path: 'a', hash_method: 'md5' },
        { key: 'z', path: '$.a' },
      ],
      message,
    );
    expect(reads).toBe(1);
  });

  it('gives a row for any message, object or not', () => {
    for (const message of [null, {}, 3, 'text', [], [1, 2], true]) {
      expect(map([{ key: 'a', path: 'a' }], message)).toEqual([{ a: null }]);
    }
  });

  it('turns values JSON cannot hold into an error row instead of throwing', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const rows = map([{ key: 'a', path: 'self', cast: 'string' }], cyclic);
    expect(rows).toHaveLength(1);
    expect(rows[0]?.a).toBeNull();
    expect(rows[0]?.error).toMatch(/^mapper: .*circular/i);
  });
});

describe('wildcards', () => {
  it('expands a * over an object that sits inside an array', () => {
    const rows = map([{ key: 'v', path: 'a|*|b|*' }], { a: [{ b: [1, 2] }, { b: { x: 3 } }] });
    // a[1].b is an object: its * is skipped, the path ends there, and the object is the value.
    expect(rows).toEqual([{ v: 1 }, { v: 2 }, { v: { x: 3 } }]);
  });

  it('treats a * over a scalar as missing', () => {
    expect(map([{ key: 'v', path: 'a|*' }], { a: 5 })).toEqual([{ v: null }]);
  });

  it('applies transformations and nullability row by row', () => {
    const rows = map([{ key: 'n', path: 'ns|*', cast: 'int', nullable: false }], { ns: ['1', 'x', null] });
    expect(rows).toEqual([
      { n: 1 },
      { n: null, error: 'n: cannot cast "x" to int' },
      { n: null, error: 'n: missing value for a non-nullable column' },
    ]);
  });

  it('lets concatenation entries expand with the columns', () => {
    const rows = map(
      [{ key: 'label', concatenate_fields: [{ path: 'items|*|sku' }, { static: '#' }, { path: 'id' }] }],
      { id: 7, items: [{ sku: 'a' }, { sku: 'b' }] },
    );
    expect(rows).toEqual([{ label: 'a#7' }, { label: 'b#7' }]);
  });

  it('de-duplicates on values read, so encrypted copies of one value still collapse', () => {
    const rows = map([{ key: 'e', path: 'tags|*', encrypt_method: 'aes-256-gcm', encrypt_key: 'k' }], {
      tags: ['a', 'a'],
    });
    expect(rows).toHaveLength(1);
  });

  it('de-duplicates large expansions like small ones', () => {
    const tags = Array.from({ length: 100 }, (_, i) => ({ v: i % 7, o: { deep: i % 2 } }));
    const rows = map(
      [
        { key: 'v', path: 'tags|*|v' },
        { key: 'o', path: 'tags|*|o' },
      ],
      { tags },
    );
    expect(rows).toHaveLength(14);
    expect(rows.slice(0, 3)).toEqual([
      { v: 0, o: { deep: 0 } },
      { v: 1, o: { deep: 1 } },
      { v: 2, o: { deep: 0 } },
    ]);
  });
});

describe('processMapper', () => {
  it('compiles, applies and reuses the compiled configuration', () => {
    const config = [{ key: 'e', path: 'a', encrypt_method: 'aes-256-gcm', encrypt_key: 'k' }];
    const [first] = processMapper(config, { a: 'x' });
    const [second] = processMapper(structuredClone(config), { a: 'y' });
    // Same compiled rule set, hence the same salt (third field) in both outputs.
    expect(String(first?.e).split(':')[2]).toBe(String(second?.e).split(':')[2]);
  });

  it('validates before touching the message', () => {
    const read = jestFn();
    const message = {
      get a() {
        return read();
      },
    };
    expect(() => processMapper([{ key: 'a', path: 'a', cast: 'nope' }], message)).toThrow(MapperConfigError);
    expect(read).not.toHaveBeenCalled();
  });
});

// --- properties ---------------------------------------------------------------

// Messages over a small key alphabet, so random paths actually hit values.
const KEYS = ['a', 'b', '0', '1'] as const;
const { json } = fc.letrec((tie) => ({
  json: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.string({ maxLength: 6 }),
    fc.constantFrom('1', 'yes', '2024-02-29', '10:00', '31/02/2024'),
    fc.array(tie('json'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom(...KEYS), tie('json'), { maxKeys: 4 }),
  ),
}));
const pathArb = fc
  .array(fc.constantFrom(...KEYS, '*'), { minLength: 1, maxLength: 4 })
  .map((segments) => segments.join('|'));
const opt = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const ruleArb = fc.record({
  path: opt(pathArb),
  static: opt(fc.string({ maxLength: 3 })),
  cast: opt(
    fc.constantFrom('string', 'int', 'float', 'bool', 'date', 'datetime', 'time') as fc.Arbitrary<
      MapperRule['cast']
    >,
  ),
  cast_format: opt(fc.constantFrom('%d/%m/%Y', '%H:%M')),
  nullable: opt(fc.boolean()),
  hash_method: opt(fc.constantFrom('md5', 'sha256', 'sha512') as fc.Arbitrary<MapperRule['hash_method']>),
  concatenate_fields: opt(
    fc.array(fc.record({ path: opt(pathArb), static: opt(fc.string({ maxLength: 2 })) }), {
      minLength: 1,
      maxLength: 3,
    }),
  ),
});
const configArb = fc
  .array(ruleArb, { minLength: 1, maxLength: 6 })
  .map((rules) => rules.map((r, i) => ({ key: `c${i}`, ...r }) as MapperRule))
  .filter((config) => validateMapperConfig(config).length === 0);

describe('properties', () => {
  it('a valid configuration never throws: every message gives rows with every column', () => {
    fc.assert(
      fc.property(configArb, fc.array(json, { maxLength: 5 }), (config, messages) => {
        const mapper = compileMapper(config);
        for (const message of messages) {
          const rows = mapper.apply(message);
          expect(rows.length).toBeGreaterThanOrEqual(1);
          for (const row of rows) {
            expect(Object.keys(row).filter((k) => k !== 'error')).toEqual(config.map((r) => r.key));
            if ('error' in row) expect(typeof row.error).toBe('string');
          }
        }
      }),
      { numRuns: 400 },
    );
  });

  it('lists integer-like column names first, as every JavaScript object does', () => {
    const [row] = map(
      [
        { key: 'b', static: 'x' },
        { key: '2', static: 'y' },
      ],
      {},
    );
    expect(Object.keys(row ?? {})).toEqual(['2', 'b']);
  });

  it('any column name comes out as written, in rule order', () => {
    const keys = fc.uniqueArray(
      fc
        .oneof(
          fc.string({ unit: 'binary', minLength: 1, maxLength: 8 }),
          fc.constantFrom('"', '\\', '}', '\u2028', '`${x}`', '1x'),
        )
        // Integer-like names are listed first by any JavaScript object (README, "Values").
        .filter((k) => k !== 'error' && k !== '__proto__' && !/^(0|[1-9]\d*)$/.test(k)),
      { minLength: 1, maxLength: 5 },
    );
    fc.assert(
      fc.property(keys, (names) => {
        const [row] = map(
          names.map((key, i) => ({ key, static: String(i) })),
          {},
        );
        expect(Object.entries(row ?? {})).toEqual(names.map((k, i) => [k, String(i)]));
      }),
    );
  });

  it('a wildcard column over n distinct elements gives n rows, in order', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.oneof(fc.string(), fc.integer()), { minLength: 1, maxLength: 50 }),
        (items) => {
          expect(map([{ key: 'v', path: 'items|*' }], { items })).toEqual(items.map((v) => ({ v })));
        },
      ),
    );
  });

  it('zipped columns never give more rows than the longest array', () => {
    const arrays = fc.array(fc.array(json, { maxLength: 8 }), { minLength: 1, maxLength: 3 });
    fc.assert(
      fc.property(arrays, fc.boolean(), (lists, sameRoot) => {
        // Same root: r|*|k0, r|*|k1 over objects; different roots: k0|*, k1|* over the lists.
        const config = lists.map((_, i) => ({ key: `k${i}`, path: sameRoot ? `r|*|k${i}` : `k${i}|*` }));
        const longest = Math.max(1, ...lists.map((l) => l.length));
        const message = sameRoot
          ? {
              r: Array.from({ length: longest }, (_, j) =>
                Object.fromEntries(lists.map((l, i) => [`k${i}`, l[j]])),
              ),
            }
          : Object.fromEntries(lists.map((l, i) => [`k${i}`, l]));
        expect(map(config, message).length).toBeLessThanOrEqual(longest);
      }),
    );
  });

  it('hashing is deterministic and matches the digest of the text form', () => {
    fc.assert(
      fc.property(
        fc.constantFrom('md5', 'sha256', 'sha512') as fc.Arbitrary<'md5'>,
        fc.oneof(fc.string(), fc.integer()),
        (method, value) => {
          const mapper = compileMapper([{ key: 'h', path: 'v', hash_method: method }]);
          const [a] = mapper.apply({ v: value });
          const [b] = compileMapper([{ key: 'h', path: 'v', hash_method: method }]).apply({ v: value });
          expect(a?.h).toBe(b?.h);
          expect(a?.h).toBe(createHash(method).update(String(value), 'utf8').digest('hex'));
        },
      ),
    );
  });

  it('de-duplication keeps the first occurrence of each distinct row, in order', () => {
    const rowArb = fc.array(fc.oneof(fc.constantFrom(undefined, null, 1, 'a'), fc.constant({ x: 1 })), {
      minLength: 2,
      maxLength: 2,
    });
    fc.assert(
      fc.property(fc.array(rowArb, { maxLength: 80 }), (rows) => {
        const id = (r: unknown[]) => JSON.stringify(r.map((v) => v ?? null));
        const expected = rows.filter((r, i) => rows.findIndex((o) => id(o) === id(r)) === i);
        expect(dedupe(rows)).toEqual(expected);
      }),
    );
  });
});
