import type { BaseOptions, SASLMechanismValue } from '@platformatic/kafka';
import type { StreamConnection } from '@sluice/shared/catalog';
import type { OutboundPolicy } from '@sluice/shared/net';
import { brokerOutbound, type BrokerOutbound } from './broker-policy.js';

// Connection settings of a Kafka cluster as the connector schemas spell them
// (spec 2.13: KAFKA_SOURCE `bootstrap_servers`, KAFKA_TARGET
// `bootstrap_server`), after secret references were resolved, turned into
// the options of the Kafka client (@platformatic/kafka).

export interface KafkaConnection {
  brokers: string[];
  security_protocol?: string;
  sasl_mechanism?: string;
  sasl_username?: string;
  sasl_password?: string;
  ca_cert?: string;
  /**
   * The platform's own stream broker (SLUICE_STREAM_BROKERS): the operator's
   * setting, not a user's, so the outbound address policy does not apply.
   */
  platform?: true;
}

/** The client's options, with the outbound address policy of its broker connections. */
export type KafkaClientOptions = BaseOptions & { outbound?: BrokerOutbound };

const SUPPORTED_SASL = new Set(['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512']);

/** Reads a resolved configuration object (source, target or stream settings). */
export function kafkaConnection(config: Record<string, unknown>): KafkaConnection {
  const servers = String(config.bootstrap_servers ?? config.bootstrap_server ?? '');
  const text = (key: string) => (typeof config[key] === 'string' ? { [key]: config[key] as string } : {});
  return {
    brokers: splitBrokers(servers),
    ...text('security_protocol'),
    ...text('sasl_mechanism'),
    ...text('sasl_username'),
    ...text('sasl_password'),
    ...text('ca_cert'),
  };
}

export function splitBrokers(list: string): string[] {
  return list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/**
 * The platform's stream broker (database sources publish there): the
 * operator's SLUICE_STREAM_BROKERS, passed to every worker.
 */
export function platformStream(env: NodeJS.ProcessEnv = process.env): KafkaConnection {
  const brokers = splitBrokers(env.SLUICE_STREAM_BROKERS ?? '');
  if (brokers.length === 0) {
    throw new Error('SLUICE_STREAM_BROKERS is not set: the platform stream broker is unknown to this worker');
  }
  return { brokers, platform: true };
}

/** The cluster of a subscription's stream (resolved configuration). */
export function streamKafkaConnection(stream: StreamConnection): KafkaConnection {
  return stream.kind === 'platform' ? platformStream() : kafkaConnection(stream);
}

/** A stable text naming the cluster and the identity used, to share one client per cluster. */
export function connectionKey(c: KafkaConnection): string {
  return JSON.stringify([
    c.brokers,
    c.security_protocol,
    c.sasl_mechanism,
    c.sasl_username,
    c.ca_cert,
    c.platform === true,
  ]);
}

/**
 * Client options; throws a clear message for settings this client cannot use.
 * Every broker of a user's cluster, bootstrap or named by its metadata, is
 * dialled under `policy` (broker-policy.ts): it is required for any cluster
 * but the platform's stream broker.
 */
export function clientOptions(
  c: KafkaConnection,
  clientId: string,
  policy?: OutboundPolicy,
): KafkaClientOptions {
  if (c.brokers.length === 0) throw new Error('no Kafka bootstrap servers are configured');
  if (!c.platform && !policy) {
    throw new Error(
      'the brokers of a Kafka cluster a user configured are dialled only under an outbound policy',
    );
  }
  const protocol = c.security_protocol ?? 'PLAINTEXT';
  const sasl = protocol === 'SASL_PLAINTEXT' || protocol === 'SASL_SSL';
  const tls = protocol === 'SSL' || protocol === 'SASL_SSL';
  const options: KafkaClientOptions = {
    clientId,
    bootstrapBrokers: c.brokers,
    connectTimeout: 10_000,
    // Retries of the client itself, between which the worker stays up: a
    // broker restart is ridden out, a wrong address fails the worker.
    retries: 10,
    retryDelay: 500,
  };
  if (sasl) {
    const mechanism = c.sasl_mechanism ?? 'PLAIN';
    if (!SUPPORTED_SASL.has(mechanism)) {
      throw new Error(`SASL mechanism ${mechanism} is not supported by this version of Sluice`);
    }
    if (!c.sasl_username || !c.sasl_password) throw new Error('SASL needs sasl_username and sasl_password');
    options.sasl = {
      mechanism: mechanism as SASLMechanismValue,
      username: c.sasl_username,
      password: c.sasl_password,
    };
  }
  if (tls) options.tls = c.ca_cert ? { ca: c.ca_cert } : {};
  if (!c.platform && policy) options.outbound = brokerOutbound(policy);
  return options;
}
