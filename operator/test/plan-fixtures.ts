import { WORKER_FINALIZER, type ConnectorResource, type WorkerObservation } from '@sluice/shared';
import type { Action, Plan } from '../src/reconcile/actions.js';
import type { ConnectorInput } from '../src/reconcile/connector/connector.plan.js';

// What the planners' unit tests share: a connector, its planner's input, and
// reading a plan back.

export const NOW = '2026-11-23T12:00:00Z';
export const id = (n: number) => `00000000-0000-4000-8000-00000000000${n}`;

export function connector(
  over: Partial<ConnectorResource['spec']> = {},
  meta: Partial<ConnectorResource['metadata']> = {},
) {
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
  } as ConnectorResource;
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
