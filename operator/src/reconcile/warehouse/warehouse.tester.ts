import { type WarehouseResource } from '@sluice/shared/catalog';
import { type OutboundHttpOptions } from '@sluice/shared/net';
import { managedSecretName, type SecretScope, type SecretStorePort } from '@sluice/shared/ports';
import { runWarehouseTest, warehouseTestStatus } from '@sluice/shared/warehouses';

// The effect behind a `testWarehouse` action: the connection test of spec
// 2.12 with the gateway's outbound policy and its token, and the status the
// gateway's POST /warehouses/{id}/test writes (both from shared/src/warehouses).

export interface WarehouseTesterOptions {
  /** The outbound options of warehouse calls (warehouseHttpOptions: the gateway's policy, CAs, deadline). */
  http: OutboundHttpOptions;
  /** Where tokens are read. */
  secrets: Pick<SecretStorePort, 'resolve'>;
  /** The namespace of the Secrets (the worker namespace, where the gateway writes managed ones). */
  secretNamespace: string;
  /**
   * The namespace whose warehouses own `sluice-warehouse-<name>` (the control
   * plane's, where the API creates them); default `secretNamespace`. A
   * Warehouse applied elsewhere under the name of another cannot use its token.
   */
  homeNamespace?: string;
  /**
   * The scope a token reference is checked in. Default, the operator's look
   * (it cannot see which environment a team is in, as for workers:
   * runtime/worker-grants.ts): the warehouse's team, any environment grant,
   * its managed secret. The embedded operator is given the gateway's own.
   */
  scope?: (w: WarehouseResource) => Promise<SecretScope>;
}

function operatorScope(opts: WarehouseTesterOptions, w: WarehouseResource): SecretScope {
  const home = opts.homeNamespace ?? opts.secretNamespace;
  return {
    teamIds: [w.spec.teamId],
    envIds: [],
    ownSecrets: w.metadata.namespace === home ? [managedSecretName('warehouse', w.metadata.name)] : [],
    envGrantsUnchecked: true,
  };
}

/** The test of `w`'s settings; its verdict as the status merge patch. */
export async function testWarehouse(
  opts: WarehouseTesterOptions,
  w: WarehouseResource,
  now: string,
): Promise<Record<string, unknown>> {
  const scope = opts.scope ? await opts.scope(w) : operatorScope(opts, w);
  const verdict = await runWarehouseTest(w.spec, opts.http, {
    secrets: opts.secrets,
    namespace: opts.secretNamespace,
    scope,
  });
  return warehouseTestStatus(verdict, w, now);
}
