import { OutboundPolicy, parseCidrList } from '@sluice/shared/net';

// The address policy of workers' outbound connections (database sources and
// targets, webhooks, the brokers of Kafka sources and targets and of their
// streams: kafka/broker-policy.ts): user-supplied hosts are an SSRF surface.
// Unlike the gateway's calls, a worker's normal job is reaching databases and
// brokers in private networks (10.x, a local PostgreSQL on a laptop), so by
// default it refuses only link-local addresses — the cloud metadata endpoints
// (169.254.169.254) — and the "this network" and unspecified addresses (which
// reach the worker's own host). IPv6 forms of a denied IPv4 address are denied
// with it (shared/src/net/embedded-ipv4.ts). Operators widen the deny-list with
// SLUICE_WORKER_DENY_CIDRS (comma-separated, replacing the default) and punch
// holes with SLUICE_WORKER_ALLOW_CIDRS (docs/data-plane.md).

export const WORKER_DEFAULT_DENIED_CIDRS = ['169.254.0.0/16', 'fe80::/10', '0.0.0.0/8', '::/128'];

export function workerOutboundPolicy(env: NodeJS.ProcessEnv = process.env): OutboundPolicy {
  const list = (name: string): string[] | undefined => {
    const raw = env[name]?.trim();
    if (!raw) return undefined;
    try {
      return parseCidrList(raw);
    } catch (e) {
      throw new Error(`${name}: ${(e as Error).message}`, { cause: e });
    }
  };
  return new OutboundPolicy({
    deny: list('SLUICE_WORKER_DENY_CIDRS') ?? WORKER_DEFAULT_DENIED_CIDRS,
    allow: list('SLUICE_WORKER_ALLOW_CIDRS') ?? [],
  });
}
