import type { Condition, ConnectorResource, ConnectorStatus } from '@sluice/shared/catalog';
import type { Action, Plan } from '../src/reconcile/actions.js';
import { workerSelector } from '../src/reconcile/connector/connector.plan.js';
import { connector } from './plan-fixtures.js';

// What the tests of the Degraded conditions of a source (its replication
// slot, its binary logs) share: the paused source as the operator left it
// (its scale status too), with what was measured, and the plan read back.

export function pausedSource(
  spec: Partial<ConnectorResource['spec']>,
  name: string,
  measured: Pick<ConnectorStatus, 'replicationSlot' | 'binlog'> = {},
  conditions?: Condition[],
): ConnectorResource {
  const c = connector({ teamId: 't', configuration: {}, desiredState: 'stopped', ...spec }, { name });
  return {
    ...c,
    status: {
      state: 'paused',
      observedGeneration: 1,
      effectiveState: 'stopped',
      effectiveReason: 'Its desiredState is stopped',
      replicas: 0,
      selector: workerSelector(c),
      ...measured,
      ...(conditions ? { conditions } : {}),
    },
  };
}

export const statusOf = (plan: Plan) =>
  (plan.actions.find((a) => a.type === 'patchStatus') as Extract<Action, { type: 'patchStatus' }> | undefined)
    ?.status;

export const degradedOf = (plan: Plan) =>
  (statusOf(plan)?.conditions as Condition[] | undefined)?.find((c) => c.type === 'Degraded');
