// The columns of a registered schema (spec 2.11), for GET /datamodels/{id}/schema:
// the fields of an Avro record, or the properties of a JSON Schema object.

export interface SchemaColumn {
  name: string;
  type: string;
  nullable: boolean;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

function avroType(t: unknown): { type: string; nullable: boolean } {
  if (typeof t === 'string') return { type: t, nullable: t === 'null' };
  if (Array.isArray(t)) {
    const others = t.filter((x) => x !== 'null');
    const inner = others.length === 1 ? avroType(others[0]) : { type: 'union', nullable: false };
    return { type: inner.type, nullable: others.length < t.length || inner.nullable };
  }
  if (isObject(t)) {
    const logical = typeof t.logicalType === 'string' ? t.logicalType : undefined;
    return { type: logical ?? String(t.type ?? 'unknown'), nullable: false };
  }
  return { type: 'unknown', nullable: true };
}

function jsonType(t: unknown, required: boolean): { type: string; nullable: boolean } {
  const s = isObject(t) ? t : {};
  const types = Array.isArray(s.type) ? s.type.map(String) : s.type === undefined ? [] : [String(s.type)];
  const real = types.filter((x) => x !== 'null');
  const format = typeof s.format === 'string' ? `:${s.format}` : '';
  return {
    type: real.length === 1 ? `${real[0]}${format}` : real.length ? real.join('|') : 'any',
    nullable: !required || types.includes('null'),
  };
}

export function schemaFields(kind: 'AVRO' | 'JSON', text: string): SchemaColumn[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return [];
  }
  if (!isObject(parsed)) return [];
  if (kind === 'AVRO') {
    const fields = Array.isArray(parsed.fields) ? parsed.fields.filter(isObject) : [];
    return fields.map((f) => ({ name: String(f.name), ...avroType(f.type) }));
  }
  const props = isObject(parsed.properties) ? parsed.properties : {};
  const required = new Set(Array.isArray(parsed.required) ? parsed.required.map(String) : []);
  return Object.entries(props).map(([name, t]) => ({ name, ...jsonType(t, required.has(name)) }));
}
