import type { LookupFunction } from 'node:net';
import type { OutboundPolicy } from '@sluice/shared/net';
import { chain, type Chained } from '../failure.js';

// The outbound address policy on the broker connections of a Kafka client.
// The client dials the bootstrap brokers, then every broker the cluster's
// metadata names (leaders, the group coordinator), on its own: a check of the
// configured list alone would let a cluster advertise 169.254.169.254 or
// 0.0.0.0. So the policy goes into the client's connection itself, through
// the `outbound` option scripts/patch-kafka-client.mjs adds: every address a
// socket is opened to is checked (a name by the socket's `lookup`, so the
// address checked is the address connected to; an IP literal before the
// socket exists), and a refusal fails at once, without the client's retries.

/** The client option (scripts/patch-kafka-client.mjs, network/connection.js). */
export interface BrokerOutbound {
  lookup: LookupFunction;
  assertHost(host: string): void;
}

export function brokerOutbound(policy: OutboundPolicy): BrokerOutbound {
  return { lookup: policy.lookup, assertHost: (host) => policy.assertHost(host) };
}

/** An error of the chain, with the broker the client's connection errors name. */
type BrokerError = Chained & { broker?: { host?: unknown; port?: unknown } };

/** The first error of the chain (outermost first) that `test` accepts. */
const find = (error: unknown, test: (e: BrokerError) => boolean): BrokerError | undefined =>
  (chain(error) as BrokerError[]).find(test);

const isRefusal = (e: BrokerError) => e.code === 'EADDRDENIED';

/** Whether an outbound policy refused a connection somewhere in this error's chain. */
export function isOutboundRefusal(error: unknown): boolean {
  return find(error, isRefusal) !== undefined;
}

/**
 * "broker 0.0.0.0:9092 is refused by the outbound policy: …" when a broker
 * connection was refused somewhere in this error's chain, else undefined.
 */
export function brokerRefusal(error: unknown): string | undefined {
  const refused = find(error, (e) => e.broker !== undefined && isRefusal((e.cause ?? {}) as BrokerError));
  if (!refused) return undefined;
  const host = String(refused.broker?.host);
  const where = `${host.includes(':') ? `[${host}]` : host}:${String(refused.broker?.port)}`;
  return `broker ${where} is refused by the outbound policy: ${String((refused.cause as Chained).message)}`;
}
