import { Consumer } from '@platformatic/kafka';
import {
  clientOptions,
  describeKafkaFailure,
  describeSourceReaderFailure,
  kafkaConnection,
  kafkaProbeOptions as kafkaClientOptions,
  openKafkaSink,
  openPostgresSink,
  openSourceReader,
  openWebhookSink,
  platformStream,
  SystemFailure,
  type Sink,
  type SourceReader,
} from '@sluice/dataplane';
import {
  sourceWorkerConfig,
  targetWorkerConfig,
  type ConnectorResource,
  type WorkerConfig,
} from '@sluice/shared/catalog';
import { type OutboundPolicy } from '@sluice/shared/net';
import type { GatewayContext } from '../../context.js';
import { outboundPolicy } from '../../connections/outbound.js';
import { resolvedWorkerConfig } from '../../connections/worker-configuration.js';
import { MissingObjectError, subscriptionObjects } from '../connectors/connectors.worker-config.js';

// What a backfill connects to, from the gateway: the source (its Kafka
// cluster, or its database) and the target, through the workers' own
// connection and sink code, with the secrets of the worker configuration
// resolved from the secret store in memory only, and under the gateway's
// outbound-address policy (docs/data-plane.md "Outbound addresses").

/** Deadline of connecting and of one request to a source while planning. */
const CONNECT_TIMEOUT_MS = 10_000;

/** The source connector's type and configuration, secrets resolved. */
async function sourceOf(
  ctx: GatewayContext,
  sourceId: string,
): Promise<{ type: string; configuration: Record<string, unknown> }> {
  const source = await ctx.catalog.get<ConnectorResource>('Connector', sourceId);
  if (!source) throw new MissingObjectError('Connector', sourceId);
  const { configuration } = await resolvedWorkerConfig(ctx, sourceWorkerConfig(source, []));
  return { type: source.spec.connectorType, configuration };
}

/**
 * A Kafka client of a KAFKA_SOURCE's cluster that joins no group (fetch and
 * list offsets only; `groupId` names the group whose offsets it may read).
 */
export async function openStreamClient(
  ctx: GatewayContext,
  sourceId: string,
  groupId = `sluice-backfill-${sourceId}`,
) {
  const conn = kafkaConnection((await sourceOf(ctx, sourceId)).configuration);
  // Every broker the client dials, bootstrap or advertised, is under the policy.
  const client = new Consumer<Buffer, Buffer, Buffer, Buffer>({
    ...kafkaClientOptions(conn, outboundPolicy(ctx), CONNECT_TIMEOUT_MS),
    // Unlike a pre-flight check, a run rides out a short broker outage.
    clientId: 'sluice-backfill',
    retries: 5,
    retryDelay: 500,
    groupId,
  });
  try {
    // Fails here, not at the first read, when the cluster cannot be reached.
    await client.metadata({ topics: [] });
  } catch (e) {
    await client.close(true).catch(() => undefined);
    throw e;
  }
  return client;
}

/**
 * A client of the platform stream broker (SLUICE_STREAM_BROKERS) that joins no
 * group: it reads database sources' change streams, and the offsets of
 * `groupId`. The broker is the
 * operator's own setting, not user input, so no address policy applies.
 */
export function openPlatformStreamClient(
  groupId = 'sluice-backfill-platform',
): Consumer<Buffer, Buffer, Buffer, Buffer> {
  return new Consumer<Buffer, Buffer, Buffer, Buffer>({
    ...clientOptions(platformStream(), 'sluice-backfill'),
    retries: 2,
    groupId,
  });
}

/**
 * A reader of a database source's tables (read-only queries, a keyset page
 * each); a source that cannot be opened is a SystemFailure with the
 * pre-flight checks' sentence.
 */
export async function openSourceTables(ctx: GatewayContext, sourceId: string): Promise<SourceReader> {
  const { type, configuration } = await sourceOf(ctx, sourceId);
  try {
    // No statement deadline: a page of a large table may take a while.
    return await openSourceReader(type, configuration, {
      policy: outboundPolicy(ctx),
      applicationName: 'sluice-backfill',
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
    });
  } catch (e) {
    throw new SystemFailure(describeSourceReaderFailure(type, configuration, e), { cause: e });
  }
}

/** How the targets of this version open their Sink (the workers' own factories). */
const SINKS: Record<string, (config: WorkerConfig, policy: OutboundPolicy) => Promise<Sink>> = {
  KAFKA_TARGET: (config, policy) => openKafkaSink(config, { policy }),
  POSTGRES_TARGET: (config, policy) => openPostgresSink(config, { policy }),
  WEBHOOK_TARGET: (config, policy) => openWebhookSink(config, { policy }),
};

export const backfillTargetTypes = (): string[] => Object.keys(SINKS);

/**
 * The target worker's configuration narrowed to one subscription, secrets
 * resolved, and the Sink it writes to.
 */
export async function openTarget(
  ctx: GatewayContext,
  subscriptionId: string,
): Promise<{ config: WorkerConfig; sink: Sink }> {
  const { subscription, datamodel, source, target } = await subscriptionObjects(ctx, subscriptionId);
  const open = SINKS[target.spec.connectorType];
  if (!open) throw new Error(`Backfills into ${target.spec.connectorType} are not supported by this version`);
  const config = await resolvedWorkerConfig(
    ctx,
    targetWorkerConfig(target, [{ subscription, datamodel, source }]),
  );
  return { config, sink: await open(config, outboundPolicy(ctx)) };
}

/** One sentence for a failure reading a source's stream (the pre-flight checks' wording; no stack, no secret). */
export function describeStreamFailure(e: unknown): string {
  return describeKafkaFailure(e, "the source's Kafka cluster");
}
