import { CAPTURE_DROPPED, CAPTURE_RELEASED_ANNOTATION, type ConnectorResource } from '@sluice/shared/catalog';
import { cdcNames, connectorType } from '@sluice/shared/connectors';

// What a source's capture leaves behind once its connector is deleted, and
// only the gateway can remove (the operator reads no connector secrets and
// speaks to no broker):
// - a PostgreSQL source's replication slot on the user's server: left
//   behind, it makes the server keep WAL until its disk is full;
// - a MySQL or MariaDB source's position topic `sluice-position.<id>` on the
//   platform broker (a compacted topic no one would read again).
// So the finalizer of such a source being deleted waits — after its worker
// stopped, before its managed Secret goes — for the gateway's
// CAPTURE_RELEASED_ANNOTATION, at most SLUICE_CAPTURE_RELEASE_TIMEOUT_MS
// (default 2 minutes, so a connector never hangs in deletion when no gateway
// runs); without it, or when the removal failed, a Warning event names what
// was left for a person to remove.

export const DEFAULT_CAPTURE_RELEASE_TIMEOUT_MS = 120_000;
/** How often a waiting deletion looks again (the annotation also queues it at once). */
const RECHECK_MS = 5000;

export function captureReleaseTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env.SLUICE_CAPTURE_RELEASE_TIMEOUT_MS);
  return Number.isSafeInteger(v) && v >= 0 ? v : DEFAULT_CAPTURE_RELEASE_TIMEOUT_MS;
}

/** Where the deletion of `c` stands with its capture: wait, go on, or go on with a warning (and its reason). */
export type CaptureReleaseStep = { wait: number } | { warning?: string; reason?: string };

interface Left {
  /** What is left, as a sentence names it. */
  what: string;
  removed: string;
  /** How a person removes it. */
  removeIt: string;
  /** The Warning event's reason. */
  reason: string;
}

/** What the capture of `c` leaves behind, or undefined for types that leave nothing. */
function leftBehind(c: ConnectorResource): Left | undefined {
  const type = connectorType(c.spec.connectorType)?.type;
  if (type === 'POSTGRES_SOURCE') {
    const { slot } = cdcNames(c.metadata.name, c.spec.configuration as { slot_name?: string });
    return {
      what: `the replication slot ${slot}`,
      removed: 'dropped',
      removeIt: `drop it on the source: SELECT pg_drop_replication_slot('${slot}')`,
      reason: 'ReplicationSlotLeft',
    };
  }
  if (type === 'MYSQL_SOURCE' || type === 'MARIADB_SOURCE') {
    const topic = `sluice-position.${c.metadata.name}`;
    return {
      what: `the position topic ${topic}`,
      removed: 'deleted',
      removeIt: `delete it on the platform broker: kafka-topics.sh --delete --topic ${topic}`,
      reason: 'PositionTopicLeft',
    };
  }
  return undefined;
}

const upper = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

export function captureReleaseStep(
  c: ConnectorResource,
  now: string,
  timeoutMs: number | undefined,
): CaptureReleaseStep {
  const left = timeoutMs === undefined ? undefined : leftBehind(c);
  if (timeoutMs === undefined || !left) return {};
  const outcome = c.metadata.annotations?.[CAPTURE_RELEASED_ANNOTATION];
  if (outcome === CAPTURE_DROPPED) return {};
  const { what, removed, removeIt, reason } = left;
  if (outcome !== undefined)
    return { warning: `${upper(what)} was not ${removed} (${outcome}); ${removeIt}`, reason };
  const elapsed = Date.parse(now) - Date.parse(c.metadata.deletionTimestamp ?? now);
  if (elapsed < timeoutMs) return { wait: Math.max(1, Math.min(RECHECK_MS, timeoutMs - elapsed)) };
  return {
    warning: `No gateway ${removed} ${what} within ${Math.round(timeoutMs / 1000)} s; ${removeIt}`,
    reason,
  };
}
