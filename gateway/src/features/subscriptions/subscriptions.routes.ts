import { Type, type TSchema } from '@sinclair/typebox';
import { SecretRef } from '@sluice/shared/connectors';
import { mapperConfigSchema, mapperRuleSchema } from '@sluice/shared/mapper';
import {
  SubscribeAll,
  SubscriptionCreate,
  SubscriptionList,
  SubscriptionListQuery,
  SubscriptionPage,
  SubscriptionRead,
  SubscriptionUpdate,
} from '@sluice/shared/schemas';
import type { GatewayContext } from '../../context.js';
import { IdParams } from '../../http/params.js';
import { accepted, created, noContent, ok, route, type AnyRoute } from '../../http/route.js';
import * as subscriptions from './subscriptions.service.js';

/** encrypt_key given: a value or a reference, not null. */
const encryptKeySet = { required: ['encrypt_key'], properties: { encrypt_key: { not: { type: 'null' } } } };

/**
 * The mapping as the document states it: the mapper's column rules
 * (shared/mapper/rule.ts), with `encrypt_key` also a secret reference
 * (`<redacted>` keeps the stored one). What a schema cannot say (path syntax,
 * strftime directives, unique keys, a table target's primary key) stays a
 * located 422.
 */
const SubscriptionMapperConfig = Type.Unsafe<unknown[]>({
  ...mapperConfigSchema,
  $id: 'SubscriptionMapperConfig',
  items: {
    ...mapperRuleSchema,
    properties: {
      ...mapperRuleSchema.properties,
      encrypt_key: { anyOf: [{ type: 'string', minLength: 1 }, SecretRef, { type: 'null' }] },
    },
    // A reference sets encrypt_key as a value does: encrypt_method and it still go together.
    allOf: mapperRuleSchema.allOf.map((part) =>
      'if' in part && part.if.required[0] === 'encrypt_key'
        ? { ...part, if: encryptKeySet }
        : 'then' in part && part.then.required[0] === 'encrypt_key'
          ? { ...part, then: encryptKeySet }
          : part,
    ),
  },
});

/** The body as documented: the mapping's rules, and `smt_config` another name of `mapper_config`, so not both. */
const oneMapperName = <T extends TSchema>(schema: T): T => ({
  ...schema,
  properties: {
    ...(schema.properties as object),
    mapper_config: SubscriptionMapperConfig,
    smt_config: {
      allOf: [SubscriptionMapperConfig],
      description: 'Another name of mapper_config (spec 2.9)',
    },
  },
  not: { required: ['mapper_config', 'smt_config'] },
});

const tag = 'subscriptions';
const forbidden403 = { description: 'Not a member of the owning team' };
const notFound404 = { description: 'No such subscription' };
const invalid422 = {
  description:
    'Invalid body, mapper rules (located by rule index), unknown ids, or a table target without a primary key',
};

export function subscriptionRoutes(ctx: GatewayContext): AnyRoute[] {
  const toggle = (call: 'start' | 'pause') =>
    route({
      method: 'post',
      path: `/subscriptions/:id/${call}`,
      tag,
      auth: 'user',
      summary: call === 'start' ? 'Enable the subscription' : 'Disable the subscription',
      description: 'The target worker restarts to apply it (spec 3.2); the answer comes before it has.',
      params: IdParams,
      responses: {
        202: { description: 'The subscription', schema: SubscriptionRead },
        403: forbidden403,
        404: notFound404,
        409: { description: 'start: a table target and a mapping without a primary key' },
      },
      handler: async ({ principal, params }) =>
        accepted(await subscriptions.setEnabled(ctx, principal, params.id, call === 'start')),
    });
  return [
    route({
      method: 'get',
      path: '/subscriptions/',
      tag,
      auth: 'user',
      summary: 'List subscriptions (filters: team_id, datamodel_id, target_connector_id, enabled, search)',
      query: SubscriptionListQuery,
      responses: {
        200: { description: 'A page of subscriptions', schema: SubscriptionPage },
        403: forbidden403,
      },
      handler: async ({ principal, query }) =>
        ok(await subscriptions.listSubscriptions(ctx, principal, query)),
    }),
    route({
      method: 'post',
      path: '/subscriptions/',
      tag,
      auth: 'user',
      summary: 'Deliver one data model to one target connector',
      description:
        'Defaults: name `{data model}-{target}`, target_table_name the table part of the entry, ' +
        'consumer_id `sluice-{id}`, enabled, no backfill, no error table. Both ends must belong to one team. ' +
        'Kubernetes: created in the release namespace, so both ends must live there (an end applied in ' +
        'another watched namespace is a 422 naming it: references never cross namespaces).',
      body: SubscriptionCreate,
      documentedBody: oneMapperName(SubscriptionCreate),
      responses: {
        201: { description: 'Created', schema: SubscriptionRead },
        403: forbidden403,
        422: invalid422,
      },
      handler: async ({ principal, body }) =>
        created(await subscriptions.createSubscription(ctx, principal, body)),
    }),
    route({
      method: 'post',
      path: '/subscriptions/subscribe-all',
      tag,
      auth: 'user',
      summary: 'Deliver several data models to several targets at once (all or nothing)',
      body: SubscribeAll,
      responses: {
        201: {
          description: 'The subscriptions, one per (data model, target) pair',
          schema: SubscriptionList,
        },
        403: forbidden403,
        422: invalid422,
      },
      handler: async ({ principal, body }) => created(await subscriptions.subscribeAll(ctx, principal, body)),
    }),
    route({
      method: 'get',
      path: '/subscriptions/:id',
      tag,
      auth: 'user',
      summary: 'Read a subscription',
      params: IdParams,
      responses: {
        200: { description: 'The subscription', schema: SubscriptionRead },
        403: forbidden403,
        404: notFound404,
      },
      handler: async ({ principal, params }) =>
        ok(await subscriptions.getSubscription(ctx, principal, params.id)),
    }),
    route({
      method: 'patch',
      path: '/subscriptions/:id',
      tag,
      auth: 'user',
      summary: 'Change a subscription (all fields optional); the target worker restarts',
      params: IdParams,
      body: SubscriptionUpdate,
      documentedBody: oneMapperName(SubscriptionUpdate),
      responses: {
        200: { description: 'The subscription', schema: SubscriptionRead },
        403: forbidden403,
        404: notFound404,
        422: invalid422,
      },
      handler: async ({ principal, params, body }) =>
        ok(await subscriptions.updateSubscription(ctx, principal, params.id, body)),
    }),
    route({
      method: 'delete',
      path: '/subscriptions/:id',
      tag,
      auth: 'user',
      summary: 'Delete a subscription',
      params: IdParams,
      responses: {
        204: { description: 'Deleted' },
        403: forbidden403,
        404: notFound404,
        409: { description: 'It belongs to a pipeline: delete the pipeline' },
      },
      handler: async ({ principal, params }) => {
        await subscriptions.deleteSubscription(ctx, principal, params.id);
        return noContent();
      },
    }),
    toggle('start'),
    toggle('pause'),
  ];
}
