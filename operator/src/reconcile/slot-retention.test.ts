import { describe, expect, it } from '@jest/globals';
import {
  type Condition,
  type ConnectorResource,
  type ReplicationSlotStatus,
  type SubscriptionResource,
} from '@sluice/shared/catalog';
import { degradedOf, pausedSource, statusOf } from '../../test/degraded-fixtures.js';
import { pipeline as pipelineOf } from '../../test/plan-fixtures.js';
import { planConnector } from './connector/connector.plan.js';
import { planPipeline } from './pipeline/pipeline.plan.js';
import { slotRetentionCondition, slotWalDegradedBytes } from './slot-retention.js';

const NOW = '2026-11-23T12:00:00Z';
const LATER = '2026-11-23T12:05:00Z';
const MiB = 1024 * 1024;
const slot = (bytes: number): ReplicationSlotStatus => ({
  name: 'sluice_a',
  retainedWalBytes: bytes,
  measuredAt: NOW,
});

const paused = (replicationSlot?: ReplicationSlotStatus, conditions?: Condition[]): ConnectorResource =>
  pausedSource(
    { name: 'pg', connectorType: 'POSTGRES_SOURCE' },
    'src',
    replicationSlot ? { replicationSlot } : {},
    conditions,
  );

const connectorPlan = (c: ConnectorResource, now = NOW) =>
  planConnector({
    connector: c,
    datamodels: [],
    subscriptions: [],
    worker: undefined,
    slotWalDegradedBytes: 10 * MiB,
    now,
  });
describe('the Degraded condition of a replication slot retaining WAL', () => {
  it('is set past the threshold with the size in its message, and its Warning event', () => {
    const plan = connectorPlan(paused(slot(12 * MiB)));
    expect(degradedOf(plan)).toMatchObject({ status: 'True', reason: 'ReplicationSlotRetention' });
    expect(degradedOf(plan)?.message).toContain('sluice_a retains 12.0 MiB of WAL');
    expect(plan.actions).toContainEqual(
      expect.objectContaining({ type: 'event', eventType: 'Warning', reason: 'ReplicationSlotRetention' }),
    );
    // The state stays what it was: only the condition moves.
    expect(statusOf(plan)?.state).toBeUndefined();
  });

  it('is not set at or under the threshold, and clears once the WAL drops', () => {
    expect(degradedOf(connectorPlan(paused(slot(10 * MiB))))?.status).toBe('False');
    const degraded = connectorPlan(paused(slot(12 * MiB)));
    const conditions = statusOf(degraded)?.conditions as Condition[];
    const cleared = connectorPlan(paused(slot(1 * MiB), conditions), LATER);
    expect(degradedOf(cleared)).toMatchObject({
      status: 'False',
      reason: 'Paused',
      lastTransitionTime: LATER,
    });
    // Steady: nothing more to write.
    expect(connectorPlan(paused(slot(12 * MiB), conditions), LATER).actions).toEqual([]);
  });

  it('makes the pipeline of that source Degraded too', () => {
    const source = paused(slot(12 * MiB));
    const other = { ...paused(), metadata: { ...paused().metadata, name: 'tgt' } } as ConnectorResource;
    const pipeline = pipelineOf(
      {
        desiredState: 'paused',
        ownsSource: false,
        ownsTarget: false,
        sourceConnectorId: 'src',
        targetConnectorId: 'tgt',
      },
      { name: 'p' },
    );
    const subscription = {
      metadata: { name: 's', namespace: 'ns' },
      spec: { enabled: false },
    } as SubscriptionResource;
    const plan = planPipeline({
      pipeline,
      source,
      target: other,
      subscription,
      slotWalDegradedBytes: 10 * MiB,
      now: NOW,
    });
    expect(degradedOf(plan)).toMatchObject({ status: 'True', reason: 'ReplicationSlotRetention' });

    expect(slotRetentionCondition(slot(5), undefined)).toBeUndefined();
  });

  it('reads its threshold from SLUICE_SLOT_WAL_DEGRADED_BYTES, 1 GiB by default', () => {
    expect(slotWalDegradedBytes({})).toBe(1024 ** 3);
    expect(slotWalDegradedBytes({ SLUICE_SLOT_WAL_DEGRADED_BYTES: '4096' })).toBe(4096);
    expect(slotWalDegradedBytes({ SLUICE_SLOT_WAL_DEGRADED_BYTES: 'lots' })).toBe(1024 ** 3);
  });
});
