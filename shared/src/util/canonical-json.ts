/**
 * JSON with the keys of every object sorted (RFC 8785's ordering for ASCII
 * keys), no whitespace, arrays in their order, `undefined` members left out:
 * two values that differ only in key order give the same text. Used where a
 * value is compared or fingerprinted (an Idempotency-Key's body, a
 * registered schema).
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}
