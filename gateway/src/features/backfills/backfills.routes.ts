import {
  BackfillPreview,
  BackfillRequest,
  BackfillRunParams,
  BackfillRunRead,
  BackfillStatusQuery,
} from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { accepted, ok, route, type AnyRoute } from '../../http/route.js';
import * as backfills from './backfills.service.js';

const tag = 'backfills';
const forbidden403 = { description: 'An object named belongs to a team the caller is not a member of' };
const invalid422 = {
  description:
    'Unknown ids, a data model of another source, a target subscribing to none of the data models, ' +
    'an unsupported connector type (every issue, located)',
};
const source400 = {
  description: 'A source could not be read to measure the replay (the reason, in one sentence)',
};

const WHAT =
  'Replays what the sources hold into the chosen targets through their subscriptions (mapper, error ' +
  'table and sink of the target worker; PostgreSQL targets upsert by key, so replaying is idempotent) ' +
  'without stopping live delivery. KAFKA_SOURCE: mode `stream`, the topic is read again from its ' +
  'earliest retained offset up to the end offsets taken at the trigger, without a consumer group. ' +
  'POSTGRES_SOURCE: mode `snapshot`, the table is read again in primary-key order and each row is ' +
  'delivered as a snapshot read (op `r`).';

export function backfillRoutes(ctx: GatewayContext): AnyRoute[] {
  return [
    route({
      method: 'post',
      path: '/backfills/preview',
      tag,
      auth: 'user',
      summary: 'What a backfill would replay: data models × targets, mode and estimated messages',
      description: `${WHAT} Nothing is written.`,
      body: BackfillRequest,
      responses: {
        200: { description: 'The pairs and their estimates', schema: BackfillPreview },
        400: source400,
        403: forbidden403,
        422: invalid422,
      },
      handler: async ({ principal, body }) => ok(await backfills.previewBackfill(ctx, principal, body)),
    }),
    route({
      method: 'post',
      path: '/backfills/',
      tag,
      auth: 'user',
      summary: 'Start a backfill run (the trigger call of spec 4.7)',
      description:
        `${WHAT} The run is recorded with its items and their progress and executed in the background ` +
        'by a gateway replica, in bounded batches; a gateway restart resumes it where it stood. ' +
        'GET /backfills/status follows it.',
      body: BackfillRequest,
      responses: {
        202: { description: 'The run, pending or running', schema: BackfillRunRead },
        400: source400,
        403: forbidden403,
        409: { description: 'A run of one of the source connectors is already pending or running' },
        422: invalid422,
      },
      handler: async ({ principal, body }) => accepted(await backfills.triggerBackfill(ctx, principal, body)),
    }),
    route({
      method: 'get',
      path: '/backfills/status',
      tag,
      auth: 'user',
      summary: 'The latest backfill run of a source connector, with the progress of each item',
      query: BackfillStatusQuery,
      responses: {
        200: { description: 'The run', schema: BackfillRunRead },
        403: { description: 'The connector belongs to a team the caller is not a member of' },
        404: { description: 'No such connector, or no backfill has run for it' },
      },
      handler: async ({ principal, query }) =>
        ok(await backfills.backfillStatus(ctx, principal, query.source_connector_id)),
    }),
    route({
      method: 'post',
      path: '/backfills/:run_id/cancel',
      tag,
      auth: 'user',
      summary: 'Cancel a backfill run',
      description:
        'A pending run ends `cancelled` at once; a running one stops after the batch it is writing ' +
        '(what was written stays) and then shows `cancelled`. `cancel_requested` is true meanwhile.',
      params: BackfillRunParams,
      responses: {
        202: { description: 'The run after the request', schema: BackfillRunRead },
        403: { description: 'The run belongs to a team the caller is not a member of' },
        404: { description: 'No such run' },
        409: { description: 'The run has already ended' },
      },
      handler: async ({ principal, params }) =>
        accepted(await backfills.cancelBackfill(ctx, principal, params.run_id)),
    }),
  ];
}
