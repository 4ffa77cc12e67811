import { type WarehouseSpec } from '@sluice/shared/catalog';
import { type DatabricksClient } from '@sluice/shared/databricks';
import { type OutboundHttpOptions } from '@sluice/shared/net';
import {
  resolveWarehouseToken,
  warehouseClient,
  warehouseHttpOptions as outboundOptions,
  type WarehouseTokenSource,
} from '@sluice/shared/warehouses';
import { managedSecretName, teamSecretScope } from '../../catalog/secrets.js';
import type { Config } from '../../config.js';
import type { GatewayContext } from '../../context.js';

// How the gateway reaches a warehouse's engine: one set of outbound options
// (policy, CAs, deadline) per process, a client per call with the token
// resolved from the secret store at that moment (never cached, never logged).
// The options and the token's resolution are shared with the operator's
// Warehouse reconciler (shared/src/warehouses).

export function warehouseHttpOptions(config: Config): OutboundHttpOptions {
  const { outbound, warehouses } = config;
  return outboundOptions({
    denyCidrs: outbound.denyCidrs,
    allowCidrs: outbound.allowCidrs,
    allowHttp: warehouses.allowHttp,
    caFile: warehouses.caFile,
    httpTimeoutMs: warehouses.httpTimeoutMs,
  });
}

/** Where a warehouse's token is read, in the scope of its team (and its own managed secret). */
export async function tokenSource(
  ctx: GatewayContext,
  id: string,
  spec: WarehouseSpec,
): Promise<WarehouseTokenSource> {
  return {
    secrets: ctx.secretStore,
    namespace: ctx.config.workerNamespace,
    scope: await teamSecretScope(ctx, [spec.teamId], [managedSecretName('warehouse', id)]),
  };
}

/**
 * The access token a spec's reference points at, if the warehouse's team may
 * use it (SecretNotFoundError when it is gone, SecretNotGrantedError when
 * not granted): every use of a warehouse's token goes through here.
 */
export async function resolveToken(ctx: GatewayContext, id: string, spec: WarehouseSpec): Promise<string> {
  return resolveWarehouseToken(spec, await tokenSource(ctx, id, spec));
}

export function engineClient(ctx: GatewayContext, host: string, token: string): DatabricksClient {
  return warehouseClient(host, token, ctx.warehouseHttp);
}
