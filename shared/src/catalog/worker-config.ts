import type { ConnectorResource, DataModelResource, SubscriptionResource } from './resources.js';

// What a worker is given (the worker program runs it): built from the custom resources
// only, so the operator and the gateway's worker-config calls show the same
// thing. Secret fields stay `valueFrom` references: the worker resolves them
// from the secret store itself, and no value ever passes through here.

/**
 * The change stream of a data model (architecture brief, data plane): a Kafka
 * source's topic is its own stream; other sources publish each data model to
 * `sluice.<data model id>` on the environment's broker unless the data model
 * names a target topic.
 */
export function changeStreamTopic(connector: ConnectorResource, dm: DataModelResource): string {
  if (connector.spec.connectorType === 'KAFKA_SOURCE') return dm.spec.sourceTopic ?? dm.spec.entry;
  return dm.spec.targetTopic ?? `sluice.${dm.metadata.name}`;
}

/**
 * Where a target worker reads the change stream of a subscription
 * (docs/data-plane.md). A KAFKA_SOURCE's stream is its own topic on the
 * user's cluster, so the target gets that connector's connection settings
 * (secret fields stay references) and its `include_metadata` switch. Database
 * sources publish to the platform's stream broker, which is the same for every
 * worker and reaches it through its environment (SLUICE_STREAM_BROKERS, set on
 * the operator and passed to every worker), not through each configuration.
 */
export type StreamConnection =
  | {
      kind: 'kafka';
      bootstrap_servers: string;
      security_protocol?: string;
      sasl_mechanism?: string;
      sasl_username?: string;
      /** A `valueFrom` reference (or, in hand-written configurations, a value). */
      sasl_password?: unknown;
      ca_cert?: unknown;
      include_metadata: boolean;
    }
  | { kind: 'platform' };

/** Whether a source of `type` publishes its data models to the platform's stream broker (all but Kafka). */
export function publishesToPlatformStream(type: string): boolean {
  return type !== 'KAFKA_SOURCE';
}

/** The stream connection of a data model of `source` (see StreamConnection). */
export function streamConnection(source: ConnectorResource): StreamConnection {
  if (publishesToPlatformStream(source.spec.connectorType)) return { kind: 'platform' };
  const c = source.spec.configuration;
  const pick = (key: string) => (c[key] === undefined || c[key] === null ? {} : { [key]: c[key] });
  return {
    kind: 'kafka',
    bootstrap_servers: String(c.bootstrap_servers ?? ''),
    ...pick('security_protocol'),
    ...pick('sasl_mechanism'),
    ...pick('sasl_username'),
    ...pick('sasl_password'),
    ...pick('ca_cert'),
    include_metadata: c.include_metadata === true,
  };
}

export interface WorkerConfig {
  connector_id: string;
  connector_type: string;
  role: 'source' | 'target';
  configuration: Record<string, unknown>;
  /** Source workers: what to capture and where each stream goes. */
  datamodels?: { id: string; name: string; entry: string; enabled: boolean; topic: string }[];
  /** Target workers: what to consume, how to map it and where to write it. */
  subscriptions?: {
    id: string;
    datamodel_id: string;
    topic: string;
    /** Where that topic is (the source's cluster, or the platform's stream broker). */
    stream: StreamConnection;
    target_table_name: string;
    mapper_config: unknown[];
    consumer_id: string;
    enabled: boolean;
    backfill: boolean;
    error_table: { enabled: boolean; name?: string; target_connector_id?: string };
  }[];
}

export function sourceWorkerConfig(
  connector: ConnectorResource,
  datamodels: DataModelResource[],
): WorkerConfig {
  return {
    connector_id: connector.metadata.name,
    connector_type: connector.spec.connectorType,
    role: 'source',
    configuration: connector.spec.configuration,
    datamodels: datamodels.map((dm) => ({
      id: dm.metadata.name,
      name: dm.spec.name,
      entry: dm.spec.entry,
      enabled: dm.spec.enabled,
      topic: changeStreamTopic(connector, dm),
    })),
  };
}

/** `sources` gives each subscription's data model with its connector (for the topic). */
export function targetWorkerConfig(
  connector: ConnectorResource,
  subscriptions: {
    subscription: SubscriptionResource;
    datamodel: DataModelResource;
    source: ConnectorResource;
  }[],
): WorkerConfig {
  return {
    connector_id: connector.metadata.name,
    connector_type: connector.spec.connectorType,
    role: 'target',
    configuration: connector.spec.configuration,
    subscriptions: subscriptions.map(({ subscription: s, datamodel, source }) => ({
      id: s.metadata.name,
      datamodel_id: s.spec.datamodelId,
      topic: changeStreamTopic(source, datamodel),
      stream: streamConnection(source),
      target_table_name: s.spec.targetTableName,
      mapper_config: s.spec.mapperConfig,
      consumer_id: s.spec.consumerId,
      enabled: s.spec.enabled && datamodel.spec.enabled,
      backfill: s.spec.backfill,
      error_table: {
        enabled: s.spec.errorTable.enabled,
        ...(s.spec.errorTable.name ? { name: s.spec.errorTable.name } : {}),
        ...(s.spec.errorTable.targetConnectorId
          ? { target_connector_id: s.spec.errorTable.targetConnectorId }
          : {}),
      },
    })),
  };
}
