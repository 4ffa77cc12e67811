import { isJsonObject, toJson, type Json } from './json.js';

/**
 * JSON merge patch (RFC 7386), the `application/merge-patch+json` of
 * Kubernetes: members of `patch` replace those of `target`, `null` removes a
 * member, objects merge recursively, anything else (arrays included) replaces
 * whole. Neither argument is modified; the result shares nothing with them.
 */
export function mergePatch(target: unknown, patch: unknown): Json {
  if (!isJsonObject(patch)) return toJson(patch);
  const result: { [key: string]: Json } = isJsonObject(target) ? { ...(toJson(target) as object) } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else if (value !== undefined) result[key] = mergePatch(result[key], value);
  }
  return result;
}
