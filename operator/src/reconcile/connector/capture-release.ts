import { CAPTURE_DROPPED, CAPTURE_RELEASED_ANNOTATION, type ConnectorResource } from '@sluice/shared/catalog';
import { cdcNames, connectorType } from '@sluice/shared/connectors';

// A PostgreSQL source holds a replication slot on the user's server; left
// behind, it makes the server keep WAL until its disk is full. Deleting the
// connector must drop it, and only the gateway can (it reads the connector's
// secrets; the operator does not). So the finalizer of a PostgreSQL source
// being deleted waits — after its worker stopped, before its managed Secret
// goes — for the gateway's CAPTURE_RELEASED_ANNOTATION, at most
// SLUICE_CAPTURE_RELEASE_TIMEOUT_MS (default 2 minutes, so a connector never
// hangs in deletion when no gateway runs); without it, or when the drop
// failed, a Warning event names the slot for a person to drop.

export const DEFAULT_CAPTURE_RELEASE_TIMEOUT_MS = 120_000;
/** How often a waiting deletion looks again (the annotation also queues it at once). */
const RECHECK_MS = 5000;

export function captureReleaseTimeoutMs(env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env.SLUICE_CAPTURE_RELEASE_TIMEOUT_MS);
  return Number.isSafeInteger(v) && v >= 0 ? v : DEFAULT_CAPTURE_RELEASE_TIMEOUT_MS;
}

/** Where the deletion of `c` stands with its capture: wait, go on, or go on with a warning. */
export type CaptureReleaseStep = { wait: number } | { warning?: string };

export function captureReleaseStep(
  c: ConnectorResource,
  now: string,
  timeoutMs: number | undefined,
): CaptureReleaseStep {
  if (timeoutMs === undefined || connectorType(c.spec.connectorType)?.type !== 'POSTGRES_SOURCE') return {};
  const outcome = c.metadata.annotations?.[CAPTURE_RELEASED_ANNOTATION];
  if (outcome === CAPTURE_DROPPED) return {};
  const { slot } = cdcNames(c.metadata.name, c.spec.configuration as { slot_name?: string });
  const dropIt = `drop it on the source: SELECT pg_drop_replication_slot('${slot}')`;
  if (outcome !== undefined)
    return { warning: `The replication slot ${slot} was not dropped (${outcome}); ${dropIt}` };
  const elapsed = Date.parse(now) - Date.parse(c.metadata.deletionTimestamp ?? now);
  if (elapsed < timeoutMs) return { wait: Math.max(1, Math.min(RECHECK_MS, timeoutMs - elapsed)) };
  return {
    warning: `No gateway dropped the replication slot ${slot} within ${Math.round(timeoutMs / 1000)} s; ${dropIt}`,
  };
}
