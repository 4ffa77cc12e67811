import { readFileSync } from 'node:fs';
import type { OutboundHttpOptions } from '../net/outbound-http.js';
import { OutboundPolicy, parseCidrList } from '../net/outbound-policy.js';

// How Sluice reaches a warehouse's engine (docs/warehouses.md, "Outbound
// calls"): the gateway's policy (private, loopback and link-local addresses
// denied unless allowed), HTTPS with the system's CAs plus the configured
// ones, a deadline per call. One definition for the gateway (its
// configuration) and the operator's Warehouse reconciler (the same
// environment variables), so a warehouse the one may reach the other may too.

export interface WarehouseOutboundSettings {
  /** SLUICE_OUTBOUND_DENY_CIDRS: never connected to; undefined: the policy's default list. */
  denyCidrs: string[] | undefined;
  /** SLUICE_OUTBOUND_ALLOW_CIDRS: allowed even inside a denied range. */
  allowCidrs: string[];
  /** SLUICE_WAREHOUSE_ALLOW_HTTP: plain HTTP to warehouse hosts (development only). */
  allowHttp: boolean;
  /** SLUICE_WAREHOUSE_CA_FILE: PEM file of extra trusted CA certificates. */
  caFile: string | undefined;
  /** SLUICE_WAREHOUSE_HTTP_TIMEOUT_MS: deadline of one REST call. */
  httpTimeoutMs: number;
}

export const WAREHOUSE_HTTP_TIMEOUT_MS = 15_000;

/**
 * The control plane's address policy for user-given hosts (warehouses, and
 * the gateway's pre-flight checks and previews): the configured deny list,
 * else the default one (private, loopback, link-local…), with the allowed
 * exceptions.
 */
export function controlPlaneOutboundPolicy(
  s: Pick<WarehouseOutboundSettings, 'denyCidrs' | 'allowCidrs'>,
): OutboundPolicy {
  return new OutboundPolicy({ ...(s.denyCidrs ? { deny: s.denyCidrs } : {}), allow: s.allowCidrs });
}

/** The outbound options of every call to a warehouse's engine, once per process. */
export function warehouseHttpOptions(s: WarehouseOutboundSettings): OutboundHttpOptions {
  return {
    policy: controlPlaneOutboundPolicy(s),
    timeoutMs: s.httpTimeoutMs,
    allowHttp: s.allowHttp,
    extraCa: s.caFile ? [readFileSync(s.caFile, 'utf8')] : [],
  };
}

/**
 * The settings from the environment, as the gateway's configuration reads
 * them (gateway/src/config.ts): the operator process's. Throws on a
 * malformed value, naming the variable.
 */
export function warehouseOutboundFromEnv(env: NodeJS.ProcessEnv): WarehouseOutboundSettings {
  const cidrs = (key: string): string[] | undefined => {
    const raw = env[key];
    if (raw === undefined) return undefined;
    try {
      return parseCidrList(raw);
    } catch (err) {
      throw new Error(`${key}: ${(err as Error).message}`, { cause: err });
    }
  };
  const allowHttp = env.SLUICE_WAREHOUSE_ALLOW_HTTP ?? '';
  if (allowHttp !== '' && !/^(1|true|yes|on|0|false|no|off)$/i.test(allowHttp)) {
    throw new Error(`SLUICE_WAREHOUSE_ALLOW_HTTP must be true or false, got "${allowHttp}"`);
  }
  const timeout = env.SLUICE_WAREHOUSE_HTTP_TIMEOUT_MS || String(WAREHOUSE_HTTP_TIMEOUT_MS);
  const httpTimeoutMs = Number(timeout);
  if (!Number.isInteger(httpTimeoutMs) || httpTimeoutMs < 100) {
    throw new Error(`SLUICE_WAREHOUSE_HTTP_TIMEOUT_MS must be an integer >= 100, got "${timeout}"`);
  }
  return {
    denyCidrs: cidrs('SLUICE_OUTBOUND_DENY_CIDRS'),
    allowCidrs: cidrs('SLUICE_OUTBOUND_ALLOW_CIDRS') ?? [],
    allowHttp: /^(1|true|yes|on)$/i.test(allowHttp),
    caFile: env.SLUICE_WAREHOUSE_CA_FILE || undefined,
    httpTimeoutMs,
  };
}
