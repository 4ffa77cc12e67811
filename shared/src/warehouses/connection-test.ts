import { createHash } from 'node:crypto';
import type { Condition, WarehouseResource, WarehouseSpec, WarehouseStatus } from '../catalog/resources.js';
import { WAREHOUSE_MOVES } from '../catalog/states.js';
import { isSecretRef } from '../connectors/secret.js';
import { DatabricksClient } from '../databricks/client.js';
import { testConnection, type ConnectionVerdict } from '../databricks/connection-test.js';
import { warehouseIdOf } from '../databricks/settings.js';
import type { OutboundHttpOptions } from '../net/outbound-http.js';
import { SecretNotFoundError, type SecretScope, type SecretStorePort } from '../ports/secret-store.js';
import { canonicalJson } from '../util/canonical-json.js';

// A warehouse's connection test (spec 2.12) and the status its verdict
// becomes (spec 3.3), for both callers: the gateway's POST
// /warehouses/{id}/test and update, and the operator's Warehouse reconciler
// (a Warehouse applied with kubectl). One function each, so the two cannot
// drift in what they call, with which token, or what they write.

/** The settings a connection test reads; a change of any of them calls for a new test. */
const CONNECTION_FIELDS = ['serverHostname', 'httpPath', 'accessToken', 'catalog', 'schema'] as const;

/**
 * What the last test ran with (`status.connectionFingerprint`): a digest of
 * the connection settings, the token as its reference (never a value). The
 * name and the team are not in it: renaming a warehouse tests nothing.
 */
export function warehouseConnectionFingerprint(spec: WarehouseSpec): string {
  const fields = Object.fromEntries(CONNECTION_FIELDS.map((f) => [f, spec[f]]));
  return createHash('sha256').update(canonicalJson(fields)).digest('hex').slice(0, 32);
}

export interface WarehouseTokenSource {
  secrets: Pick<SecretStorePort, 'resolve'>;
  /** Where the warehouse's secrets are (the worker namespace). */
  namespace: string;
  /** The scope its reference is checked in: its team's, with its own managed secret. */
  scope: SecretScope;
}

/**
 * The access token a spec's reference points at, if its scope may use it
 * (SecretNotFoundError when it is gone, SecretNotGrantedError when not
 * granted): every use of a warehouse's token goes through here.
 */
export async function resolveWarehouseToken(
  spec: WarehouseSpec,
  source: WarehouseTokenSource,
): Promise<string> {
  const ref = spec.accessToken;
  if (!isSecretRef(ref)) throw new Error('The stored access token is not a secret reference');
  return source.secrets.resolve(source.namespace, ref.valueFrom.secretKeyRef, source.scope);
}

/** A client of the engine at `host`, under the outbound options. */
export function warehouseClient(host: string, token: string, http: OutboundHttpOptions): DatabricksClient {
  return new DatabricksClient({ host, token, scheme: http.allowHttp ? 'http' : 'https' }, http);
}

/**
 * The three calls of spec 2.12 with `spec`'s settings and `token` (or the
 * stored one, from `source`); a token that cannot be read fails step 1.
 */
export async function runWarehouseTest(
  spec: WarehouseSpec,
  http: OutboundHttpOptions,
  token: string | WarehouseTokenSource,
): Promise<ConnectionVerdict> {
  let value: string;
  if (typeof token === 'string') value = token;
  else {
    try {
      value = await resolveWarehouseToken(spec, token);
    } catch (err) {
      if (!(err instanceof SecretNotFoundError)) throw err;
      return { ok: false, step: 'warehouse', message: `The access token cannot be read: ${err.message}` };
    }
  }
  const id = warehouseIdOf(spec.httpPath);
  if (!id.ok) return { ok: false, step: 'warehouse', message: id.msg };
  return testConnection(warehouseClient(spec.serverHostname, value, http), {
    warehouseId: id.value,
    ...(spec.catalog !== undefined ? { catalog: spec.catalog } : {}),
    ...(spec.schema !== undefined ? { schema: spec.schema } : {}),
  });
}

/**
 * Spec 3.3: the status is the verdict of the last test, with a Ready
 * condition for kubectl and Argo CD (its lastTransitionTime kept while its
 * status does not change) and the fingerprint of the settings it tested. A
 * merge patch: `message: null` removes an earlier failure.
 */
export function warehouseTestStatus(
  verdict: ConnectionVerdict,
  tested: Pick<WarehouseResource, 'metadata' | 'spec' | 'status'>,
  now: string,
): Omit<WarehouseStatus, 'message'> & { message: string | null } {
  const generation = tested.metadata.generation;
  const observed = generation !== undefined ? { observedGeneration: generation } : {};
  const ready: Condition['status'] = verdict.ok ? 'True' : 'False';
  const before = tested.status?.conditions?.find((c) => c.type === 'Ready');
  return {
    state: WAREHOUSE_MOVES[verdict.ok ? 'testPassed' : 'testFailed'].to,
    message: verdict.ok ? null : verdict.message,
    testedAt: now,
    connectionFingerprint: warehouseConnectionFingerprint(tested.spec),
    ...observed,
    conditions: [
      {
        type: 'Ready',
        status: ready,
        reason: verdict.ok ? 'ConnectionTestPassed' : 'ConnectionTestFailed',
        message: verdict.ok ? `Connected to SQL warehouse "${verdict.warehouse.name}"` : verdict.message,
        lastTransitionTime: before?.status === ready ? before.lastTransitionTime : now,
        ...observed,
      },
    ],
  };
}
