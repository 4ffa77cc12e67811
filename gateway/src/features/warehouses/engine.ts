import { readFileSync } from 'node:fs';
import {
  DatabricksClient,
  OutboundPolicy,
  isSecretRef,
  type OutboundHttpOptions,
  type WarehouseSpec,
} from '@sluice/shared';
import { managedSecretName, teamSecretScope } from '../../catalog/secrets.js';
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

/**
 * The access token a spec's reference points at, if the warehouse's team may
 * use it (SecretNotFoundError when it is gone, SecretNotGrantedError when
 * not granted): every use of a warehouse's token goes through here.
 */
export async function resolveToken(ctx: GatewayContext, id: string, spec: WarehouseSpec): Promise<string> {
  const ref = spec.accessToken;
  if (!isSecretRef(ref)) throw new Error('The stored access token is not a secret reference');
  const scope = await teamSecretScope(ctx, [spec.teamId], [managedSecretName('warehouse', id)]);
  return ctx.secretStore.resolve(ctx.config.workerNamespace, ref.valueFrom.secretKeyRef, scope);
}

export function engineClient(ctx: GatewayContext, host: string, token: string): DatabricksClient {
  return new DatabricksClient(
    { host, token, scheme: ctx.warehouseHttp.allowHttp ? 'http' : 'https' },
    ctx.warehouseHttp,
  );
}
