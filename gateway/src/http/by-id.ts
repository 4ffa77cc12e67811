import type { TSchema } from '@sinclair/typebox';
import type { Principal } from '../auth/principal.js';
import { IdParams } from './params.js';
import { ok, route, type AnyRoute, type ResponseSpec } from './route.js';

/** What every read of one object under `/<collection>/:id` shares: its tag and its 403 and 404 answers. */
export interface ByIdReads {
  collection: string;
  tag: string;
  forbidden403: ResponseSpec;
  notFound404: ResponseSpec;
}

/**
 * A maker of the GET routes under `/<collection>/:id`: `suffix` ('' for the
 * object itself, '/monitoring' …) names the path, `summary` is also the 200
 * answer's description, and `get` returns the body.
 */
export function byIdReader(reads: ByIdReads) {
  return (
    suffix: string,
    summary: string,
    schema: TSchema,
    get: (id: string, principal: Principal) => Promise<unknown>,
  ): AnyRoute =>
    route({
      method: 'get',
      path: `/${reads.collection}/:id${suffix}`,
      tag: reads.tag,
      auth: 'user',
      summary,
      params: IdParams,
      responses: { 200: { description: summary, schema }, 403: reads.forbidden403, 404: reads.notFound404 },
      handler: async ({ principal, params }) => ok(await get(params.id, principal)),
    });
}
