import { readFileSync } from 'node:fs';
import {
  DatabricksClient,
  OutboundPolicy,
  isSecretRef,
  type OutboundHttpOptions,
  type WarehouseSpec,
} from '@sluice/shared';
import type { Config } from '../../config.js';
import type { GatewayContext } from '../../context.js';

// How the gateway reaches a warehouse's engine: one set of outbound options
// (policy, CAs, deadline) per process, a client per call with the token
// resolved from the secret store at that moment (never cached, never logged).

export function warehouseHttpOptions(config: Config): OutboundHttpOptions {
  const { outbound, warehouses } = config;
  return {
    policy: new OutboundPolicy({ deny: outbound.denyCidrs, allow: outbound.allowCidrs }),
    timeoutMs: warehouses.httpTimeoutMs,
    allowHttp: warehouses.allowHttp,
    extraCa: warehouses.caFile ? [readFileSync(warehouses.caFile, 'utf8')] : [],
  };
}

/** The access token a spec's reference points at (SecretNotFoundError when it is gone). */
export async function resolveToken(ctx: GatewayContext, spec: WarehouseSpec): Promise<string> {
  const ref = spec.accessToken;
  if (!isSecretRef(ref)) throw new Error('The stored access token is not a secret reference');
  return ctx.secretStore.resolve(ctx.config.namespace, ref.valueFrom.secretKeyRef);
}

export function engineClient(ctx: GatewayContext, host: string, token: string): DatabricksClient {
  return new DatabricksClient(
    { host, token, scheme: ctx.warehouseHttp.allowHttp ? 'http' : 'https' },
    ctx.warehouseHttp,
  );
}
