import type { TSchema } from '@sinclair/typebox';
import type { AnyRoute } from './route.js';

type Json = Record<string, unknown>;

const objectProps = (s: TSchema | undefined): Record<string, TSchema> | undefined =>
  s && (s as Json).type === 'object'
    ? ((s as Json).properties as Record<string, TSchema> | undefined)
    : undefined;

/**
 * A client that reads an object and sends it back (`PATCH` with `id`,
 * `created_at`, `status`, …) is not wrong: the fields of the resource's read
 * shape (the 200 answer of the PATCH) that the update does not take are
 * accepted, checked against their read type, marked `readOnly`, and dropped
 * before the handler runs. Fields of neither shape stay refused (422
 * `extra_forbidden`). One rewrite of the route table, so validation and the
 * OpenAPI document describe the same body.
 */
export function acceptReadOnlyFields(r: AnyRoute): AnyRoute {
  if (r.method !== 'patch' || !r.body) return r;
  const update = objectProps(r.body);
  const read = objectProps(r.responses[200]?.schema);
  if (!update || !read) return r;
  const extra: Record<string, unknown> = {};
  for (const [name, prop] of Object.entries(read)) {
    if (name in update) continue;
    // A component keeps its `$ref` in the document; the annotation sits beside it.
    extra[name] = (prop as Json).$id ? { allOf: [prop], readOnly: true } : { ...prop, readOnly: true };
  }
  const ignored = Object.keys(extra);
  if (!ignored.length) return r;
  const widen = (s: TSchema): TSchema =>
    ({
      ...s,
      properties: { ...((s as Json).properties as Json), ...extra },
      description:
        `${((s as Json).description as string | undefined) ?? ''}${(s as Json).description ? ' ' : ''}` +
        `Read-only fields of the answer (${ignored.join(', ')}) may be sent back and are ignored.`,
    }) as unknown as TSchema;
  return {
    ...r,
    body: widen(r.body),
    ...(r.documentedBody && objectProps(r.documentedBody) ? { documentedBody: widen(r.documentedBody) } : {}),
    ignoredBodyFields: ignored,
  };
}
