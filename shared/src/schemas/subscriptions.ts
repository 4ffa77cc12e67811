import { Type, type Static } from '@sinclair/typebox';
import { HumanName, Literals, NameSearch, Nullable, Page, PageQuery, Timestamp, Uuid } from './common.js';
import { errorTableFields } from './datamodels.js';

// REST bodies of subscriptions (spec 2.9, 4.6): snake_case, as the spec writes them.

const mapperDescription =
  'Mapper column rules (spec 2.10; POST /smt/process_mapper tries them). encrypt_key takes a value or a ' +
  'valueFrom reference and reads back as <redacted>.';
export const MapperConfig = Type.Array(Type.Record(Type.String(), Type.Unknown()), {
  description: mapperDescription,
});
const subscriptionFields = {
  name: HumanName,
  target_table_name: Type.String({
    minLength: 1,
    maxLength: 255,
    description: 'Output table; the output topic for message-broker targets. Default: the data model name',
  }),
  mapper_config: MapperConfig,
  smt_config: Type.Array(Type.Record(Type.String(), Type.Unknown()), {
    description: 'Alias of mapper_config (spec 2.9)',
  }),
  consumer_id: Type.String({ minLength: 1, maxLength: 255, pattern: '^[A-Za-z0-9._-]+$' }),
  backfill: Type.Boolean(),
  enabled: Type.Boolean(),
  ...errorTableFields,
};
export const SubscriptionUpdate = Type.Partial(Type.Object(subscriptionFields), {
  $id: 'SubscriptionUpdate',
  additionalProperties: false,
});
export const SubscriptionCreate = Type.Composite(
  [
    Type.Object({ datamodel_id: Uuid, target_connector_id: Uuid }),
    Type.Partial(Type.Object(subscriptionFields)),
  ],
  { $id: 'SubscriptionCreate', additionalProperties: false },
);
export type SubscriptionCreate = Static<typeof SubscriptionCreate>;
export type SubscriptionUpdate = Static<typeof SubscriptionUpdate>;

export const SubscribeAll = Type.Object(
  {
    datamodel_ids: Type.Array(Uuid, { minItems: 1, maxItems: 100, uniqueItems: true }),
    target_connector_ids: Type.Array(Uuid, { minItems: 1, maxItems: 20, uniqueItems: true }),
    mapper_config: Type.Optional(MapperConfig),
    backfill: Type.Optional(Type.Boolean()),
    enabled: Type.Optional(Type.Boolean()),
  },
  {
    $id: 'SubscribeAll',
    additionalProperties: false,
    description:
      'One subscription per (data model, target) pair, all in one go or none: each delivers to a table ' +
      'named after its data model; any invalid pair fails the whole request (422, located).',
  },
);
export type SubscribeAll = Static<typeof SubscribeAll>;

/** What the gateway decided about re-snapshotting a new subscription with `backfill` (docs/data-plane.md "Backfills"). */
export const AutoBackfillRead = Nullable(
  Type.Object(
    {
      state: Literals(['pending', 'started', 'skipped', 'unchecked'] as const),
      reason: Type.String({ description: 'Why, in one sentence' }),
      backfill_id: Nullable(Uuid),
      decided_at: Nullable(Timestamp),
    },
    {
      additionalProperties: false,
      description:
        'The automatic re-snapshot of a subscription with `backfill`; null without `backfill`. ' +
        '`pending`: decided once the subscription, its data model and both connectors are live ' +
        '(for `backfill` turned on after creation: replayed then, in the source mode, when its ' +
        'consumer had read the stream; decided as a new subscription when it had not). ' +
        "`started`: the stream no longer began with the source's snapshot, so the snapshot run " +
        '`backfill_id` (GET /backfills/{id}) was started. `skipped`: none was needed or possible, ' +
        '`reason` says which. `unchecked`: the gateway will not decide (the feature is off, or the ' +
        'subscription was not live within SLUICE_AUTO_BACKFILL_MAX_AGE_HOURS of its creation); ' +
        'POST /backfills/ re-snapshots it by hand.',
    },
  ),
);
export type AutoBackfillRead = Static<typeof AutoBackfillRead>;

export const SubscriptionRead = Type.Object(
  {
    id: Uuid,
    name: Type.String(),
    datamodel_id: Uuid,
    target_connector_id: Uuid,
    team_id: Uuid,
    target_table_name: Type.String(),
    mapper_config: MapperConfig,
    consumer_id: Type.String(),
    backfill: Type.Boolean(),
    auto_backfill: AutoBackfillRead,
    enabled: Type.Boolean(),
    ...errorTableFields,
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'SubscriptionRead', additionalProperties: false },
);
export type SubscriptionRead = Static<typeof SubscriptionRead>;
export const SubscriptionList = Type.Array(SubscriptionRead, { $id: 'SubscriptionList' });
export const SubscriptionPage = Page(SubscriptionRead, 'Page_SubscriptionRead');
export const SubscriptionListQuery = Type.Composite([
  PageQuery,
  Type.Object({
    team_id: Type.Optional(Uuid),
    datamodel_id: Type.Optional(Uuid),
    target_connector_id: Type.Optional(Uuid),
    enabled: Type.Optional(Type.Boolean()),
    search: Type.Optional(NameSearch),
  }),
]);
export type SubscriptionListQuery = Static<typeof SubscriptionListQuery>;
