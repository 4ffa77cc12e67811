import type { SchemaColumn } from './datamodels.fields.js';

// The fields of a data model inferred from messages seen on its topic (Kafka
// sources, whose topics carry no declared schema): every leaf of the JSON
// objects, nested ones named by mapper path (`order|id`, spec 2.10), so a
// user can write the mapper rules from them. A field missing from some
// message, or null in one, is nullable; one of several types is `a|b`.

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Fields kept at most (a topic of free-form documents must not make a huge status). */
const MAX_FIELDS = 200;

function typeOf(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

export function inferFields(values: readonly unknown[]): SchemaColumn[] {
  const objects = values.filter(isObject);
  const seen = new Map<string, { types: Set<string>; count: number; nulls: number }>();
  const visit = (o: Json, prefix: string) => {
    for (const [k, v] of Object.entries(o)) {
      const path = prefix ? `${prefix}|${k}` : k;
      if (isObject(v) && Object.keys(v).length > 0) {
        visit(v, path);
        continue;
      }
      const f = seen.get(path) ?? { types: new Set<string>(), count: 0, nulls: 0 };
      f.count++;
      if (v === null) f.nulls++;
      else f.types.add(isObject(v) ? 'object' : typeOf(v));
      seen.set(path, f);
    }
  };
  for (const o of objects) visit(o, '');
  return [...seen].slice(0, MAX_FIELDS).map(([name, f]) => {
    // An integer field with one fractional value is a number.
    const types = f.types.has('number') ? [...f.types].filter((t) => t !== 'integer') : [...f.types];
    return {
      name,
      type: types.length ? types.sort().join('|') : 'null',
      nullable: f.nulls > 0 || f.count < objects.length,
    };
  });
}
