import { ApiException, V1MicroTime, type CoordinationV1Api, type V1Lease } from '@kubernetes/client-node';
import {
  LeaseConflictError,
  type LeaseConflictReason,
  type LeaseRecord,
  type LeaseStore,
} from './leader-election.js';

/** The calls of CoordinationV1Api this store makes; narrow so tests can stand in for it. */
export type LeaseApi = Pick<
  CoordinationV1Api,
  'readNamespacedLease' | 'createNamespacedLease' | 'replaceNamespacedLease'
>;

export interface KubernetesLeaseStoreOptions {
  api: LeaseApi;
  namespace: string;
  /** The Lease object's name, e.g. `sluice-operator`. */
  name: string;
  /** Labels to put on the Lease when this store creates it. */
  labels?: Record<string, string>;
}

/** The lease as a coordination.k8s.io/v1 Lease object in the API server. */
export class KubernetesLeaseStore implements LeaseStore {
  readonly #api: LeaseApi;
  readonly #namespace: string;
  readonly #name: string;
  readonly #labels: Record<string, string> | undefined;

  constructor(options: KubernetesLeaseStoreOptions) {
    this.#api = options.api;
    this.#namespace = options.namespace;
    this.#name = options.name;
    this.#labels = options.labels;
  }

  async get(): Promise<LeaseRecord | undefined> {
    try {
      return leaseToRecord(
        await this.#api.readNamespacedLease({ name: this.#name, namespace: this.#namespace }),
      );
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw error;
    }
  }

  async create(record: LeaseRecord): Promise<LeaseRecord> {
    // The API server refuses a resourceVersion on create.
    const body = this.#toLease({ ...record, resourceVersion: undefined });
    if (this.#labels) body.metadata = { ...body.metadata, labels: { ...this.#labels } };
    try {
      return leaseToRecord(await this.#api.createNamespacedLease({ namespace: this.#namespace, body }));
    } catch (error) {
      throw mapError(error, 'already-exists', `Lease ${this.#namespace}/${this.#name}`);
    }
  }

  async update(record: LeaseRecord): Promise<LeaseRecord> {
    try {
      return leaseToRecord(
        await this.#api.replaceNamespacedLease({
          name: this.#name,
          namespace: this.#namespace,
          body: this.#toLease(record),
        }),
      );
    } catch (error) {
      throw mapError(error, 'conflict', `Lease ${this.#namespace}/${this.#name}`);
    }
  }

  #toLease(record: LeaseRecord): V1Lease {
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        name: this.#name,
        namespace: this.#namespace,
        ...(record.resourceVersion !== undefined ? { resourceVersion: record.resourceVersion } : {}),
      },
      spec: {
        holderIdentity: record.holderIdentity,
        leaseDurationSeconds: record.leaseDurationSeconds,
        acquireTime: toMicroTime(record.acquireTime),
        renewTime: toMicroTime(record.renewTime),
        leaseTransitions: record.leaseTransitions,
      },
    };
  }
}

/** The record a Lease object holds; a Lease without a spec reads as a free lease. */
export function leaseToRecord(lease: V1Lease): LeaseRecord {
  const spec = lease.spec ?? {};
  return {
    holderIdentity: spec.holderIdentity || undefined,
    leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
    acquireTime: fromMicroTime(spec.acquireTime),
    renewTime: fromMicroTime(spec.renewTime),
    leaseTransitions: spec.leaseTransitions ?? 0,
    resourceVersion: lease.metadata?.resourceVersion,
  };
}

/**
 * A timestamp for the API server. It must be a V1MicroTime: a plain Date
 * serializes with milliseconds (`.123Z`), which the API server's MicroTime
 * (RFC 3339 with exactly six fractional digits) rejects.
 */
export function toMicroTime(value: string | undefined): V1MicroTime | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new RangeError(`not an RFC 3339 timestamp: ${value}`);
  return new V1MicroTime(ms);
}

/**
 * A Lease timestamp as an RFC 3339 string with milliseconds. client-node 2.x
 * types it V1MicroTime but does not revive it: at run time it is the string
 * the API server sent (microseconds), or a Date when built locally. Both are
 * normalized to one form so that equal times compare equal.
 */
export function fromMicroTime(value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  const ms = value instanceof Date ? value.getTime() : typeof value === 'string' ? Date.parse(value) : NaN;
  if (Number.isNaN(ms)) return typeof value === 'string' ? value : undefined;
  return new Date(ms).toISOString();
}

function statusOf(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

/**
 * HTTP 409 becomes a LeaseConflictError (on create it means AlreadyExists, on
 * replace a stale resourceVersion) and 404 a 'not-found' one; anything else
 * (network, 5xx, 403) is passed on as it is.
 */
function mapError(error: unknown, onConflict: LeaseConflictReason, what: string): unknown {
  switch (statusOf(error)) {
    case 409:
      return new LeaseConflictError(onConflict, `${what}: ${statusMessage(error) ?? onConflict}`);
    case 404:
      return new LeaseConflictError('not-found', `${what}: ${statusMessage(error) ?? 'not found'}`);
    default:
      return error;
  }
}

/** The message of the metav1.Status the API server sends with an error; client-node keeps the body as it came. */
function statusMessage(error: unknown): string | undefined {
  if (!(error instanceof ApiException)) return undefined;
  let body: unknown = error.body;
  if (typeof body === 'string') {
    try {
      body = JSON.parse(body);
    } catch {
      return body as string;
    }
  }
  if (typeof body !== 'object' || body === null) return undefined;
  const { message } = body as Record<string, unknown>;
  return typeof message === 'string' ? message : undefined;
}
