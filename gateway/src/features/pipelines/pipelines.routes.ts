import { Type, type TSchema } from '@sinclair/typebox';
import { CONNECTOR_TYPES } from '@sluice/shared/connectors';
import {
  CatalogFilterOneQuery,
  PipelineConfiguration,
  PipelineCount,
  PipelineCountQuery,
  PipelineCreate,
  PipelineLatency,
  PipelineListQuery,
  PipelinePage,
  PipelineRead,
  PipelineStatusPage,
  PipelineStatusRead,
  PipelineUpdate,
  StateString,
} from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { byIdReader } from '../../http/by-id.js';
import { IdParams } from '../../http/params.js';
import { accepted, created, noContent, ok, route, type AnyRoute } from '../../http/route.js';
import * as pipelines from './pipelines.service.js';

/**
 * The flattened body as documented: each side is an existing connector or a
 * new one (name, type, configuration), not both (spec 7).
 */
const given = (k: string) => ({ required: [k], properties: { [k]: { not: { type: 'null' } } } });
const oneFormPerSide = <T extends TSchema>(schema: T): T => ({
  ...schema,
  allOf: (['source', 'target'] as const).flatMap((side) => {
    const trio = [`${side}_name`, `${side}_type`, `${side}_config`];
    return [
      {
        not: {
          required: [`existing_${side}_id`],
          properties: { [`existing_${side}_id`]: { type: 'string' } },
          anyOf: trio.map(given),
        },
      },
      // A new connector needs all three, and a type of its side.
      ...trio.map((k) => ({ if: given(k), then: { allOf: trio.map(given) } })),
      {
        properties: {
          [`${side}_type`]: {
            anyOf: [
              { enum: CONNECTOR_TYPES.filter((d) => d.direction === side).map((d) => d.type) },
              { type: 'null' },
            ],
          },
        },
      },
    ];
  }),
});

const tag = 'pipelines';
const forbidden403 = { description: 'Not a member of the owning team ({detail})' };
const notFound404 = { description: 'No such pipeline' };
const invalid422 = { description: 'Invalid body (every issue, located by field)' };
/** RFC 9745: the status call is deprecated since interface version 0.1.0 (spec 9.4). */
const DEPRECATION = { Deprecation: '@1795392000', Link: '</api/pipelines/{id}>; rel="successor-version"' };

export function pipelineRoutes(ctx: GatewayContext): AnyRoute[] {
  const run = (call: 'start' | 'pause', summary: string, example: string) =>
    route({
      method: 'post',
      path: `/pipelines/:id/${call}`,
      tag,
      auth: 'user',
      summary,
      description:
        'Answers before the workers converge; the pipeline then moves on by itself (spec 3.1). ' +
        'Start: from draft, paused or error (a retry); it runs both connectors and its subscription. ' +
        'Pause: from live, building or error (it stops retrying); it disables its subscription and stops ' +
        'the connectors it created. Neither writes its parts: a later call on a part wins.',
      params: IdParams,
      responses: {
        202: { description: `The new state: "${example}"`, schema: StateString },
        403: forbidden403,
        404: notFound404,
        409: {
          description:
            'Not allowed in the current state (the message names it), or no primary key for a table target',
        },
      },
      handler: async ({ principal, params }) =>
        accepted(await pipelines.runPipeline(ctx, principal, params.id, call)),
    });
  const byId = byIdReader({ collection: 'pipelines', tag, forbidden403, notFound404 });

  return [
    route({
      method: 'get',
      path: '/pipelines/',
      tag,
      auth: 'user',
      summary: 'List pipelines (search by name, state, team_id)',
      query: PipelineListQuery,
      responses: { 200: { description: 'A page of PipelineList', schema: PipelinePage }, 403: forbidden403 },
      handler: async ({ principal, query }) => ok(await pipelines.listPipelines(ctx, principal, query)),
    }),
    route({
      method: 'post',
      path: '/pipelines/',
      tag,
      auth: 'user',
      idempotent: true,
      summary: 'Create a pipeline (nested or flattened shape); it starts as a draft, version 1',
      description:
        'Flattened (version 2): per side, `existing_*_id` or the trio `*_name`/`*_type`/`*_config` (new ' +
        'connector), never both. Nested: `json_configuration` with both trios; `state` must be `draft`. ' +
        'New connectors, their data models and the subscription are created all or nothing. ' +
        'Kubernetes: created in the release namespace; an `existing_*_id` of another watched namespace is ' +
        'a 422 (references never cross namespaces).',
      body: PipelineCreate,
      documentedBody: oneFormPerSide(PipelineCreate),
      responses: {
        201: { description: 'Created', schema: PipelineRead },
        403: forbidden403,
        409: { description: 'A pipeline (or a new connector) with this name exists in the team' },
        422: invalid422,
      },
      handler: async ({ principal, body }) => created(await pipelines.createPipeline(ctx, principal, body)),
    }),
    route({
      method: 'get',
      path: '/pipelines/count-status',
      tag,
      auth: 'user',
      summary: 'Number of visible pipelines per state',
      query: PipelineCountQuery,
      responses: { 200: { description: 'Counts', schema: PipelineCount }, 403: forbidden403 },
      handler: async ({ principal, query }) => ok(await pipelines.countStatus(ctx, principal, query.team_id)),
    }),
    route({
      method: 'get',
      path: '/pipelines/filter-one',
      tag,
      auth: 'user',
      summary: 'The pipeline with this name (in team_id when given)',
      query: CatalogFilterOneQuery,
      responses: {
        200: { description: 'The pipeline', schema: PipelineRead },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, query }) =>
        ok(await pipelines.findPipelineByName(ctx, principal, query.name, query.team_id)),
    }),
    route({
      method: 'get',
      path: '/pipelines/status/all-non-draft',
      tag,
      auth: 'user',
      summary: 'Pipelines that left the draft state, with their status',
      query: PipelineListQuery,
      responses: {
        200: { description: 'A page of statuses', schema: PipelineStatusPage },
        403: forbidden403,
      },
      handler: async ({ principal, query }) => ok(await pipelines.listNonDraft(ctx, principal, query)),
    }),
    byId('', 'Read a pipeline', PipelineRead, (id, p) => pipelines.getPipeline(ctx, p, id)),
    route({
      method: 'patch',
      path: '/pipelines/:id',
      tag,
      auth: 'user',
      summary: 'Change a pipeline (spec 4.4 update patterns); version + 1',
      params: IdParams,
      body: PipelineUpdate,
      documentedBody: oneFormPerSide(PipelineUpdate),
      responses: {
        200: { description: 'The full pipeline', schema: PipelineRead },
        403: forbidden403,
        404: notFound404,
        409: { description: 'Name taken, or changed concurrently' },
        422: invalid422,
      },
      handler: async ({ principal, params, body }) =>
        ok(await pipelines.updatePipeline(ctx, principal, params.id, body)),
    }),
    route({
      method: 'delete',
      path: '/pipelines/:id',
      tag,
      auth: 'user',
      summary: 'Delete a pipeline, its subscription and the connectors it created (unless others use them)',
      params: IdParams,
      responses: { 204: { description: 'Deleted' }, 403: forbidden403, 404: notFound404 },
      handler: async ({ principal, params }) => {
        await pipelines.deletePipeline(ctx, principal, params.id);
        return noContent();
      },
    }),
    run('start', 'Start (or resume) the pipeline', 'BUILDING'),
    run('pause', 'Pause the pipeline', 'PAUSED'),
    route({
      method: 'get',
      path: '/pipelines/:id/status',
      tag,
      auth: 'user',
      deprecated: true,
      summary: 'The state of a pipeline (deprecated: read the pipeline)',
      params: IdParams,
      responses: {
        200: { description: 'The status subset', schema: PipelineStatusRead },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, params }) => ({
        status: 200,
        body: await pipelines.getStatus(ctx, principal, params.id),
        headers: { ...DEPRECATION, Link: DEPRECATION.Link.replace('{id}', params.id) },
      }),
    }),
    byId(
      '/configuration',
      'Export the configuration (flattened body, secrets redacted)',
      PipelineConfiguration,
      (id, p) => pipelines.exportConfiguration(ctx, p, id),
    ),
    route({
      method: 'post',
      path: '/pipelines/:id/configuration',
      tag,
      auth: 'user',
      summary: 'Import a configuration as the next version',
      params: IdParams,
      body: PipelineConfiguration,
      responses: {
        200: { description: 'The full pipeline', schema: PipelineRead },
        403: forbidden403,
        404: notFound404,
        409: { description: 'The configuration is of another version than the pipeline' },
        422: invalid422,
      },
      handler: async ({ principal, params, body }) =>
        ok(await pipelines.importConfiguration(ctx, principal, params.id, body)),
    }),
    byId(
      '/worker-config',
      'What the pipeline’s workers are given (secrets as references)',
      Type.Object({}, { additionalProperties: true }),
      (id, p) => pipelines.workerConfig(ctx, p, id),
    ),
    byId(
      '/latency-informations',
      'End-to-end latency percentiles, counters, the last event time and the source slot’s retained WAL',
      PipelineLatency,
      (id, p) => pipelines.latency(ctx, p, id),
    ),
  ];
}
