import { Type, type Static } from '@sinclair/typebox';
import { Literals, Nullable, Page, PageQuery, Timestamp, Uuid } from './common.js';

// The tracked deletion of a team or an environment (docs/api.md "Deletions").
// `DELETE /teams/{id}`, `DELETE /envs/{id}` and an import that drops a team
// answer 204 at once; what the teams owned is then removed in the background,
// one step after the other, and a superuser follows it here.

/** What was deleted: one team, or an environment with every team it had. */
export const DELETION_KINDS = ['team', 'env'] as const;
export type DeletionKind = (typeof DELETION_KINDS)[number];

/**
 * `pending` until a gateway replica claims it, `running` while its steps go
 * on (a failed step is retried on the next tick, with its reason in
 * `message`), `succeeded` once nothing of the teams is left. There is no
 * failed end: a deletion is retried until it is done.
 */
export const DELETION_STATES = ['pending', 'running', 'succeeded'] as const;
export type DeletionState = (typeof DELETION_STATES)[number];

/**
 * The steps, in order: dependents before what they depend on. Pipelines go
 * first so that nothing restarts the connectors the next step stops; the
 * connectors' step also drops a PostgreSQL source's replication slot; the
 * last step waits until the cluster has let every object go (a connector
 * goes once its worker has stopped).
 */
export const DELETION_STEPS = [
  'pipelines',
  'stop_workers',
  'subscriptions',
  'datamodels',
  'connectors',
  'warehouses',
  'finalizing',
] as const;
export type DeletionStep = (typeof DELETION_STEPS)[number];

/** The kinds of objects a deletion removes, counted in its progress. */
export const DELETION_OBJECT_KINDS = [
  'pipelines',
  'subscriptions',
  'datamodels',
  'connectors',
  'warehouses',
] as const;
export type DeletionObjectKind = (typeof DELETION_OBJECT_KINDS)[number];

const Count = Type.Object(
  {
    total: Type.Integer({ minimum: 0, description: 'Objects of this kind found so far' }),
    deleted: Type.Integer({ minimum: 0, description: 'Of those, deleted so far' }),
  },
  { additionalProperties: false },
);

export const DeletionProgress = Type.Object(
  Object.fromEntries(DELETION_OBJECT_KINDS.map((k) => [k, Count])) as Record<
    DeletionObjectKind,
    typeof Count
  >,
  { $id: 'DeletionProgress', additionalProperties: false },
);
export type DeletionProgress = Static<typeof DeletionProgress>;

export const DeletionRead = Type.Object(
  {
    id: Uuid,
    kind: Literals(DELETION_KINDS, '`team`: one team; `env`: an environment and every team it had'),
    target_id: Uuid,
    target_name: Type.String({ description: 'The name the team or environment had' }),
    env_id: Uuid,
    team_ids: Type.Array(Uuid, { description: 'The teams whose objects this deletion removes' }),
    state: Literals(DELETION_STATES),
    step: Nullable(Literals(DELETION_STEPS, 'The step in progress (null before the first, and once done)')),
    progress: DeletionProgress,
    message: Nullable(
      Type.String({
        description: 'What the deletion waits for, or why its last attempt stopped, in one sentence',
      }),
    ),
    attempts: Type.Integer({
      minimum: 0,
      description: 'Passes started (a pass resumes where the last one stood)',
    }),
    requested_by: Nullable(Uuid),
    created_at: Timestamp,
    started_at: Nullable(Timestamp),
    finished_at: Nullable(Timestamp),
  },
  { $id: 'DeletionRead', additionalProperties: false },
);
export type DeletionRead = Static<typeof DeletionRead>;

export const DeletionPage = Page(DeletionRead, 'DeletionPage');
export type DeletionPage = Static<typeof DeletionPage>;

export const DeletionListQuery = Type.Composite([
  PageQuery,
  Type.Object({ state: Type.Optional(Literals(DELETION_STATES, 'Only deletions in this state')) }),
]);
export type DeletionListQuery = Static<typeof DeletionListQuery>;
