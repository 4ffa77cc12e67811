/** A JSON value as stored: what `JSON.parse` returns. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export function isJsonObject(value: unknown): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A deep copy as JSON would store it (undefined members dropped, Dates as
 * strings): what goes in the database is what comes back, so comparisons of
 * "did this change" are not fooled by values JSON cannot hold. Also cuts every
 * reference to the caller's object.
 */
export function toJson(value: unknown): Json {
  if (value === undefined) return null;
  return JSON.parse(JSON.stringify(value)) as Json;
}

/** Structural equality of JSON values; object key order does not matter (jsonb does not keep it). */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (isJsonObject(a) && isJsonObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((k) => k in b && jsonEqual(a[k], b[k]));
  }
  return false;
}
