// Compiling a validated rule set into a plan: paths parsed once, identical
// paths read once, casts and formats compiled, every column reduced to a
// closure. Applying the plan to a message allocates the row objects, one small
// array of source values per row and, only for failures, error strings.
import { hash } from 'node:crypto';
import { CastFailure, compileCast } from './cast.js';
import { createEncryptor, type Encryptor } from './crypto.js';
import {
  collectLeaves,
  compileReader,
  compileWildSteps,
  dedupe,
  newNode,
  walk,
  type WildSteps,
} from './expand.js';
import { parsePath, WILDCARD } from './path.js';
import { ERROR_KEY, type MapperRule } from './rule.js';
import { compileFormat } from './temporal.js';
import { assertMapperConfig } from './validate.js';
import { isMissing, toText } from './value.js';

export type MapperRow = Record<string, unknown>;

export interface CompiledMapper {
  /** The validated rules, as given. */
  readonly rules: readonly MapperRule[];
  /** Output column names in order (an `error` column is added to failing rows only). */
  readonly columns: readonly string[];
  /** One message to its rows. Never throws: failures become an `error` key on the row. */
  apply(message: unknown): MapperRow[];
  /** Derives encryption keys off the event loop; without it the first encrypted value derives them. */
  prepare(): Promise<void>;
}

interface Part {
  src: number;
  fallback: string | undefined;
}

type Transform = (value: unknown) => unknown;

interface ColumnPlan {
  key: string;
  /** The rule's own value: a source index and/or a static fallback. */
  main: Part;
  /** concatenate_fields entries, or null. */
  parts: Part[] | null;
  nullable: boolean;
  /** hash → encrypt → cast, composed; returns a CastFailure when it fails. */
  transform: Transform | null;
}

interface SourcePlan {
  read: ((message: unknown) => unknown) | null;
  wild: WildSteps | null;
}

const NO_SOURCE = -1;

class SourceTable {
  readonly list: SourcePlan[] = [];
  private readonly byPath = new Map<string, number>();

  /** Index of the source for `path`, shared by every rule and entry that reads it. */
  add(path: string | null | undefined): number {
    if (path === undefined || path === null || path === '') return NO_SOURCE;
    const parsed = parsePath(path);
    if (!parsed.ok) throw new Error(parsed.msg); // validated before; unreachable
    // By segments, so `items|*|sku` and `$.items[*].sku` are one source.
    const id = JSON.stringify(parsed.segments);
    const known = this.byPath.get(id);
    if (known !== undefined) return known;
    const wild = parsed.segments.includes(WILDCARD);
    this.list.push({
      read: wild ? null : compileReader(parsed.segments),
      wild: wild ? compileWildSteps(parsed.segments) : null,
    });
    this.byPath.set(id, this.list.length - 1);
    return this.list.length - 1;
  }
}

const compileTransform = (rule: MapperRule, encryptors: Encryptor[]): Transform | null => {
  const fns: Transform[] = [];
  const method = rule.hash_method;
  if (method !== undefined && method !== null) fns.push((v) => hash(method, toText(v), 'hex'));
  if (rule.encrypt_method !== undefined && rule.encrypt_method !== null) {
    const encryptor = createEncryptor(rule.encrypt_key as string);
    encryptors.push(encryptor);
    fns.push((v) => encryptor.encrypt(toText(v)));
  }
  if (rule.cast !== undefined && rule.cast !== null) {
    const format = typeof rule.cast_format === 'string' ? compileFormat(rule.cast_format) : null;
    fns.push(compileCast(rule.cast, format !== null && format.ok ? format.format : null));
  }
  if (fns.length === 0) return null;
  if (fns.length === 1) return fns[0] as Transform;
  return (value) => {
    let v = value;
    for (const fn of fns) {
      v = fn(v);
      if (v instanceof CastFailure) return v;
    }
    return v;
  };
};

const partValue = (part: Part, vals: unknown[]): unknown => {
  const v = part.src === NO_SOURCE ? undefined : vals[part.src];
  return isMissing(v) ? part.fallback : v;
};

/** Missing parts are skipped; when every part is missing the result is missing too. */
const concatenate = (first: unknown, parts: Part[], vals: unknown[]): string | undefined => {
  let out = isMissing(first) ? undefined : toText(first);
  for (const part of parts) {
    const v = partValue(part, vals);
    if (!isMissing(v)) out = out === undefined ? toText(v) : out + toText(v);
  }
  return out;
};

// Failures of the row being built. apply() is synchronous and calls no user
// code, so one slot serves every mapper; it is emptied by each row it fills.
const failures: { text: string | undefined } = { text: undefined };

const fail = (text: string): null => {
  failures.text = failures.text === undefined ? text : `${failures.text}; ${text}`;
  return null;
};

/** The column's value for one row; a failure is recorded and gives null. */
const columnValue = (col: ColumnPlan, vals: unknown[]): unknown => {
  let v = partValue(col.main, vals);
  if (col.parts !== null) v = concatenate(v, col.parts, vals);
  if (isMissing(v)) return col.nullable ? null : fail(`${col.key}: missing value for a non-nullable column`);
  if (col.transform === null) return v;
  const out = col.transform(v);
  return out instanceof CastFailure ? fail(`${col.key}: ${out.msg}`) : out;
};

type RowBuilder = (vals: unknown[]) => MapperRow;

/**
 * Generates the row builder of a rule set: one object literal with the columns
 * in rule order. Rows then share one hidden class, built without keyed stores,
 * which is what makes both building and JSON.stringify of rows cheap. Keys are
 * embedded as JSON string literals, valid and inert JavaScript for any text
 * (`__proto__` is refused by validation, since a literal would treat it as the prototype).
 */
const compileRowBuilder = (columns: ColumnPlan[]): RowBuilder => {
  const values = columns.map((_, i) => `const v${i} = value(cols[${i}], vals);`);
  const literal = columns.map((c, i) => `${JSON.stringify(c.key)}: v${i}`).join(', ');
  const body = `return function buildRow(vals) {
    ${values.join('\n    ')}
    const row = { ${literal} };
    if (failures.text !== undefined) {
      row[ERROR_KEY] = failures.text;
      failures.text = undefined;
    }
    return row;
  };`;
  return new Function('cols', 'value', 'failures', 'ERROR_KEY', body)(
    columns,
    columnValue,
    failures,
    ERROR_KEY,
  ) as RowBuilder;
};

/** Compiles a rule set; throws MapperConfigError listing every issue of an invalid one. */
export const compileMapper = (config: unknown): CompiledMapper => {
  const rules = assertMapperConfig(config);
  const sources = new SourceTable();
  const encryptors: Encryptor[] = [];
  const columns: ColumnPlan[] = rules.map((rule) => ({
    key: rule.key,
    main: { src: sources.add(rule.path), fallback: rule.static ?? undefined },
    parts:
      rule.concatenate_fields?.map((e) => ({ src: sources.add(e.path), fallback: e.static ?? undefined })) ??
      null,
    nullable: rule.nullable !== false,
    transform: compileTransform(rule, encryptors),
  }));
  const width = sources.list.length;
  const plain = sources.list.flatMap((s, i) => (s.read === null ? [] : [{ i, read: s.read }]));
  const wild = sources.list.flatMap((s, i) => (s.wild === null ? [] : [{ i, steps: s.wild }]));

  const buildRow = compileRowBuilder(columns);

  const expand = (message: unknown, vals: unknown[]): MapperRow[] => {
    const root = newNode();
    for (const s of wild) walk(s.steps, 0, message, root, s.i, width);
    const leaves: unknown[][] = [];
    collectLeaves(root, vals, leaves);
    return dedupe(leaves).map(buildRow);
  };

  const run = (message: unknown): MapperRow[] => {
    const vals = new Array<unknown>(width);
    for (const s of plain) vals[s.i] = s.read(message);
    return wild.length === 0 ? [buildRow(vals)] : expand(message, vals);
  };

  return {
    rules,
    columns: columns.map((c) => c.key),
    apply(message) {
      try {
        return run(message);
      } catch (e) {
        failures.text = undefined;
        // Only reachable with values JSON cannot hold (cycles, BigInt inside objects):
        // the message still yields a row, as rule 10 asks of every failure.
        const row: MapperRow = Object.fromEntries(columns.map((c) => [c.key, null]));
        row[ERROR_KEY] = `mapper: ${e instanceof Error ? e.message : String(e)}`;
        return [row];
      }
    },
    async prepare() {
      await Promise.all(encryptors.map((e) => e.prepare()));
    },
  };
};

// Compiling is cheap except for key derivation, which the cache also saves:
// the HTTP endpoint sees the same configuration over and over.
const CACHE_LIMIT = 64;
const cache = new Map<string, CompiledMapper>();

/** compileMapper + apply, with compiled plans cached by configuration. */
export const processMapper = (config: unknown, message: unknown): MapperRow[] => {
  const id = JSON.stringify(config);
  let mapper = cache.get(id);
  if (mapper === undefined) {
    mapper = compileMapper(config);
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value as string);
    cache.set(id, mapper);
  }
  return mapper.apply(message);
};
