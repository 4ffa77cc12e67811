import type { ReplicationSlotStatus } from '@sluice/shared/catalog';
import type { ConditionValue } from './conditions.js';

// A PostgreSQL source's replication slot keeps WAL on the source server until
// the slot is read; a paused pipeline (no worker reads it) can fill the
// source's disk. Past a threshold (SLUICE_SLOT_WAL_DEGRADED_BYTES, default
// 1 GiB) the connector and its pipelines are Degraded, whatever their state,
// until the retained WAL drops below it again (docs/data-plane.md, "Monitoring").

export const DEFAULT_SLOT_WAL_DEGRADED_BYTES = 1024 ** 3;
export const SLOT_RETENTION_REASON = 'ReplicationSlotRetention';

/** The threshold from the environment: a positive integer of bytes, else the default. */
export function slotWalDegradedBytes(env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env.SLUICE_SLOT_WAL_DEGRADED_BYTES);
  return Number.isSafeInteger(v) && v > 0 ? v : DEFAULT_SLOT_WAL_DEGRADED_BYTES;
}

export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}

/** The Degraded condition the slot calls for, or undefined when it retains no more than `threshold`. */
export function slotRetentionCondition(
  slot: ReplicationSlotStatus | undefined,
  threshold: number | undefined,
): ConditionValue | undefined {
  if (!slot || threshold === undefined || slot.retainedWalBytes <= threshold) return undefined;
  return {
    status: 'True',
    reason: SLOT_RETENTION_REASON,
    message:
      `Replication slot ${slot.name} retains ${formatBytes(slot.retainedWalBytes)} of WAL on the source ` +
      `(threshold ${formatBytes(threshold)}, measured ${slot.measuredAt}): start the pipeline so the slot ` +
      'is read, or delete the connector to drop the slot',
  };
}
