import {
  WORKER_FINALIZER,
  type ConnectorResource,
  type DataModelResource,
  type PipelineResource,
  type SubscriptionResource,
} from '@sluice/shared/catalog';
import { type WorkerObservation } from '@sluice/shared/ports';
import type { Action, Plan } from '../src/reconcile/actions.js';
import type { ConnectorInput } from '../src/reconcile/connector/connector.plan.js';

// What the planners' unit tests share: catalog objects typed as the
// resources are (overrides of spec and metadata, no casts), a connector
// planner's input, and reading a plan back.

export const NOW = '2026-11-23T12:00:00Z';
export const id = (n: number) => `00000000-0000-4000-8000-00000000000${n}`;

type Meta = Partial<ConnectorResource['metadata']>;

export function connector(over: Partial<ConnectorResource['spec']> = {}, meta: Meta = {}): ConnectorResource {
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'Connector',
    metadata: { name: id(1), namespace: 'ns', generation: 1, finalizers: [WORKER_FINALIZER], ...meta },
    spec: {
      name: 'orders-src',
      teamId: id(9),
      connectorType: 'KAFKA_SOURCE',
      configuration: { topic: ['orders'] },
      desiredState: 'running',
      ...over,
    },
  };
}

const errorTable = { enabled: false };

export function datamodel(over: Partial<DataModelResource['spec']> = {}, meta: Meta = {}): DataModelResource {
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'DataModel',
    metadata: { name: id(2), namespace: 'ns', generation: 1, ...meta },
    spec: {
      name: 'orders',
      teamId: id(9),
      connectorId: id(1),
      entry: 'orders',
      enabled: true,
      errorTable,
      ...over,
    },
  };
}

export function subscription(
  over: Partial<SubscriptionResource['spec']> = {},
  meta: Meta = {},
): SubscriptionResource {
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'Subscription',
    metadata: { name: id(3), namespace: 'ns', generation: 1, ...meta },
    spec: {
      name: 'orders-to-wh',
      teamId: id(9),
      datamodelId: id(2),
      targetConnectorId: id(4),
      targetTableName: 'orders',
      mapperConfig: [],
      consumerId: 'c',
      backfill: false,
      enabled: true,
      errorTable,
      ...over,
    },
  };
}

export function pipeline(over: Partial<PipelineResource['spec']> = {}, meta: Meta = {}): PipelineResource {
  return {
    apiVersion: 'sluice.dev/v1alpha1',
    kind: 'Pipeline',
    metadata: { name: id(5), namespace: 'ns', generation: 1, ...meta },
    spec: {
      name: 'orders-copy',
      teamId: id(9),
      sourceConnectorId: id(1),
      targetConnectorId: id(4),
      datamodelId: id(2),
      subscriptionId: id(3),
      ownsSource: true,
      ownsTarget: true,
      desiredState: 'running',
      version: 1,
      ...over,
    },
  };
}

export const input = (c: ConnectorResource, worker?: WorkerObservation): ConnectorInput => ({
  connector: c,
  datamodels: [],
  subscriptions: [],
  worker,
  now: NOW,
});

/** Applies a plan's status and patches to the object, as the API server would. */
export function applied<T extends { status?: unknown; metadata: { finalizers?: string[] } }>(
  o: T,
  plan: Plan,
): T {
  let out = structuredClone(o);
  for (const a of plan.actions) {
    if (a.type === 'patchStatus') out = { ...out, status: { ...(out.status as object), ...a.status } };
    if (a.type === 'patch' && a.patch.metadata) {
      out = { ...out, metadata: { ...out.metadata, ...(a.patch.metadata as object) } };
    }
  }
  return out;
}

export const types = (plan: Plan) => plan.actions.map((a) => a.type);
export const status = (plan: Plan) =>
  (plan.actions.find((a) => a.type === 'patchStatus') as Extract<Action, { type: 'patchStatus' }>)?.status;
