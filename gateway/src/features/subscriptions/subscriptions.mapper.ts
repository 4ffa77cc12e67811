import type { SubscriptionSpec } from '@sluice/shared/catalog';
import type { AutoBackfillRead, SubscriptionRead } from '@sluice/shared/schemas';
import { LOOKING, NOT_READ_YET, TURNED_ON_LATER } from '../backfills/backfills.reasons.js';
import { redactMapper } from '../../catalog/mapper-secrets.js';
import { managedSecretName } from '../../catalog/secrets.js';
import { toIso, toIsoOrNull } from '../../db/timestamps.js';
import type { SubscriptionRecord } from './subscriptions.repository.js';

type AutoColumns =
  | 'backfill_on_at'
  | 'backfill_on_consumed'
  | 'auto_backfill_decision'
  | 'auto_backfill_reason'
  | 'auto_backfill_run_id'
  | 'auto_backfill_decided_at';

/** A subscription's own columns: what a pipeline's bundle has too. */
export type SubscriptionFields = Omit<SubscriptionRecord, AutoColumns>;

export function toSubscriptionRead(
  row: SubscriptionFields,
  autoBackfill: AutoBackfillRead = null,
): SubscriptionRead {
  const spec = row.spec as SubscriptionSpec;
  return {
    id: row.id,
    name: row.name,
    datamodel_id: row.datamodel_id,
    target_connector_id: row.target_connector_id,
    team_id: row.team_id as string,
    target_table_name: spec.targetTableName,
    mapper_config: redactMapper(spec.mapperConfig ?? [], managedSecretName('subscription', row.id)),
    consumer_id: spec.consumerId,
    backfill: spec.backfill,
    auto_backfill: autoBackfill,
    enabled: row.enabled,
    error_table_enabled: spec.errorTable?.enabled ?? false,
    error_table_name: spec.errorTable?.name ?? null,
    error_table_target_id: spec.errorTable?.targetConnectorId ?? null,
    created_at: toIso(row.created_at),
    updated_at: toIso(row.updated_at),
  };
}

/**
 * The automatic re-snapshot as a user sees it: the recorded decision, or why
 * there is none yet. `maxAgeMs` is the gateway's bound (0: the feature is off),
 * the same the backfill runner's tick applies (backfills.auto.ts).
 */
export function autoBackfillView(row: SubscriptionRecord, maxAgeMs: number, now: Date): AutoBackfillRead {
  const decision = row.auto_backfill_decision;
  const decidedAt = row.auto_backfill_decided_at;
  const onAt = row.backfill_on_at;
  // A decision taken before `backfill` was last turned on is the past's: a new one is due.
  if (decision && (!onAt || (decidedAt && new Date(decidedAt) >= new Date(onAt)))) {
    return {
      state: decision,
      reason: row.auto_backfill_reason ?? '',
      backfill_id: row.auto_backfill_run_id,
      decided_at: toIsoOrNull(decidedAt),
    };
  }
  if (!(row.spec as SubscriptionSpec).backfill) return null;
  const undecided = { backfill_id: null, decided_at: null };
  if (maxAgeMs <= 0) {
    return {
      state: 'unchecked',
      reason: 'automatic re-snapshots are turned off on this gateway',
      ...undecided,
    };
  }
  if (now.getTime() - new Date(onAt ?? row.created_at).getTime() >= maxAgeMs) {
    const from = onAt ? 'backfill being turned on' : 'its creation';
    return {
      state: 'unchecked',
      reason: `the subscription was not live within ${maxAgeMs / 3_600_000} hours of ${from}`,
      ...undecided,
    };
  }
  const when = 'once the subscription, its data model and both of its connectors are live';
  return {
    state: 'pending',
    reason: pendingReason(onAt ? row.backfill_on_consumed : undefined, when),
    ...undecided,
  };
}

/** Why a decision is pending: `consumed` is what was found at the switch (undefined: no switch). */
function pendingReason(consumed: boolean | null | undefined, when: string): string {
  if (consumed === undefined) return `decided ${when}`;
  if (consumed === null) return `${LOOKING}: the gateway looks whether its consumer has read the stream yet`;
  if (consumed) return `${TURNED_ON_LATER}: replayed ${when}`;
  return `${NOT_READ_YET}, so it reads the stream from its beginning: decided as for a new subscription ${when}`;
}
