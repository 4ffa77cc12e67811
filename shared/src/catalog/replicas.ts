import { CONNECTOR_TYPES, connectorType } from '../connectors/registry.js';

// How many workers a connector runs (`spec.replicas` of the Connector,
// `replicas` of the REST body). A target's workers join one consumer group
// and share the data models' partitions; per-key order holds because change
// events are keyed by primary key, so one key's events are in one partition,
// read by one worker at a time. A source has exactly one reader by
// construction, so it runs one worker whatever it is asked for: the API
// refuses another count (422), the CRD refuses it too (a CEL rule on spec,
// which `kubectl scale` goes through), and the operator runs one anyway.

/** The replica count a connector runs without one. */
export const DEFAULT_REPLICAS = 1;
/** The largest replica count accepted; workers past the partition count idle. */
export const MAX_REPLICAS = 100;

/** The connector types whose workers scale out (the targets). */
export const SCALABLE_CONNECTOR_TYPES: readonly string[] = CONNECTOR_TYPES.filter(
  (t) => t.direction === 'target',
).map((t) => t.type);

/** Whether workers of `type` can run side by side (targets, in a consumer group). */
export function scalesOut(type: string): boolean {
  return SCALABLE_CONNECTOR_TYPES.includes(type);
}

/** Why a connector of `type` runs one worker: its one reader. */
export function singleReaderReason(type: string): string {
  const reader =
    type === 'POSTGRES_SOURCE'
      ? 'its replication slot has one reader'
      : type === 'MYSQL_SOURCE' || type === 'MARIADB_SOURCE'
        ? 'its binary log position has one reader'
        : type === 'KAFKA_SOURCE'
          ? 'its topic is read by one consumer that reports what is on it'
          : connectorType(type)?.direction === 'job'
            ? 'a job runs once'
            : 'its change capture has one reader';
  return `A ${type} runs one worker: ${reader}. Only target connectors take a replica count other than 1.`;
}

/** The replica count the connector's workers run with: its own for a target, else 1. */
export function workerReplicas(spec: { connectorType: string; replicas?: number }): number {
  return scalesOut(spec.connectorType) ? (spec.replicas ?? DEFAULT_REPLICAS) : DEFAULT_REPLICAS;
}

/**
 * The CRD's rule on a Connector's spec (x-kubernetes-validations, CEL): a
 * replica count other than 1 only for a target. The API server applies it to
 * every write of the spec, the scale subresource's included.
 */
export const REPLICAS_RULE = {
  rule:
    `!has(self.replicas) || self.replicas == ${DEFAULT_REPLICAS} || ` +
    `self.connectorType in [${SCALABLE_CONNECTOR_TYPES.map((t) => `'${t}'`).join(', ')}]`,
  message:
    'only target connectors take a replica count other than 1: a source has one reader ' +
    '(a replication slot, a binary log position, one consumer)',
  fieldPath: '.replicas',
  reason: 'FieldValueInvalid',
} as const;
