import { PreviewRequest, PreviewResult } from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { IdParams } from '../../http/params.js';
import { ok, route, type AnyRoute } from '../../http/route.js';
import * as preview from './preview.service.js';

// Preview before going live (the spec is silent: docs/api.md
// "Preview"). One route per object a user may hold: a subscription, or the
// pipeline that wraps one.

const DESCRIPTION =
  'Fetches the newest messages of the source (`limit`, default 5, at most 50) — or maps the `messages` ' +
  'of the body instead — and runs them through the target worker’s own mapping code: the rows it would ' +
  'write, the messages and rows it would route to the error table (`errors`, with their `error` key), ' +
  'and for a PostgreSQL target the DDL its sink would run against the table as it is now (CREATE TABLE, ' +
  'or the ALTER TABLE … ADD COLUMN for missing columns) with type conflicts. A Kafka source is read on ' +
  'its own cluster; a database source on the platform stream broker, and when its change stream has no ' +
  'messages yet (never started) a few rows of the source table are sampled and shaped as snapshot change ' +
  'events. Nothing is written anywhere: no consumer group joins, no offset is committed, no table is ' +
  'created. Each connection has a 10 s deadline and the gateway’s outbound-address policy.';

const responses = (what: string) => ({
  200: { description: 'What the worker would do with these messages', schema: PreviewResult },
  403: { description: `Not a member of the team owning the ${what}` },
  404: { description: `No such ${what}` },
  409: { description: 'A secret of the configuration is missing, or the objects it joins no longer exist' },
  422: { description: 'Invalid body: `limit` out of 1–50, `messages` empty or over 50, unknown fields' },
  502: {
    description:
      'The source, the stream broker or the target could not be reached or refused the credentials; ' +
      '`detail` says which and why',
  },
});

const SUMMARY = {
  subscriptions: 'Preview the subscription on live messages: mapped rows, errors, DDL (nothing is written)',
  pipelines: "Preview the pipeline's subscription on live messages (nothing is written)",
};

export function previewRoutes(ctx: GatewayContext): AnyRoute[] {
  const previewOf = (kind: 'subscriptions' | 'pipelines') =>
    route({
      method: 'post',
      path: `/${kind}/:id/preview`,
      tag: kind,
      auth: 'user',
      summary: SUMMARY[kind],
      description: DESCRIPTION,
      params: IdParams,
      body: PreviewRequest,
      responses: responses(kind === 'subscriptions' ? 'subscription' : 'pipeline'),
      handler: async ({ principal, params, body }) =>
        ok(
          kind === 'subscriptions'
            ? await preview.previewSubscription(ctx, principal, params.id, body)
            : await preview.previewPipeline(ctx, principal, params.id, body),
        ),
    });
  return [previewOf('subscriptions'), previewOf('pipelines')];
}
