import { describe, expect, it } from '@jest/globals';
import type {
  ConnectorResource,
  DataModelResource,
  Monitoring,
  PipelineResource,
  SubscriptionResource,
} from '@sluice/shared/catalog';
import { connector, datamodel, pipeline as pipelineOf, subscription } from '../../test/plan-fixtures.js';
import type { Action } from '../reconcile/actions.js';
import { planMonitoring, type MonitoringInput, type ScrapedWorker } from './monitoring-plan.js';
import { emptyFigures, type WorkerFigures } from './worker-figures.js';

const NOW = '2026-11-23T12:00:00Z';
const LATER = '2026-11-23T12:00:15Z';
const meta = (name: string) => ({ name, namespace: 'ns', generation: 1 });
const src = connector({ name: 'src' }, meta('src'));
const tgt = connector({ name: 'tgt', connectorType: 'KAFKA_TARGET' }, meta('tgt'));
const dm = (monitoring?: Monitoring): DataModelResource => ({
  ...datamodel({ connectorId: 'src' }, meta('dm')),
  status: { monitoring },
});
const sub = (monitoring?: Monitoring): SubscriptionResource => ({
  ...subscription({ datamodelId: 'dm', targetConnectorId: 'tgt' }, meta('sub')),
  status: { monitoring },
});
const pipeline = (monitoring?: Monitoring): PipelineResource => ({
  ...pipelineOf(
    { sourceConnectorId: 'src', targetConnectorId: 'tgt', datamodelId: 'dm', subscriptionId: 'sub' },
    meta('p'),
  ),
  status: { monitoring },
});

const source = (published: number, startedAtMs = Date.parse(NOW) - 60_000, wal?: number): WorkerFigures => ({
  ...emptyFigures(),
  startedAtMs,
  published: { dm: published },
  sourceLastEventMs: { dm: Date.parse(NOW) - 1000 },
  ...(wal !== undefined ? { slot: { name: 'slot_a', retainedWalBytes: wal } } : {}),
});
const target = (n: number, errors = 0, startedAtMs = Date.parse(NOW) - 60_000): WorkerFigures => ({
  ...emptyFigures(),
  startedAtMs,
  consumed: { sub: n + errors },
  confirmed: { sub: n + errors },
  errors: { sub: errors },
  lastEventMs: { sub: Date.parse(NOW) - 2000 },
  latency: {
    sub: [
      { le: 0.1, count: n },
      { le: 1, count: n + errors },
      { le: Infinity, count: n + errors },
    ],
  },
});

function plan(
  workers: Record<string, ScrapedWorker>,
  objects: { d?: Monitoring; s?: Monitoring; p?: Monitoring; connectors?: ConnectorResource[] } = {},
  now = NOW,
): Action[] {
  const input: MonitoringInput = {
    connectors: objects.connectors ?? [src, tgt],
    datamodels: [dm(objects.d)],
    subscriptions: [sub(objects.s)],
    pipelines: [pipeline(objects.p)],
    workers: new Map(Object.entries(workers).map(([k, v]) => [`ns/${k}`, v])),
    slotWalDegradedBytes: 1000_000,
    now,
  };
  return planMonitoring(input);
}
const monitoringOf = (actions: Action[], name: string) =>
  (
    actions.find((a) => a.type === 'patchStatus' && a.ref.name === name) as Extract<
      Action,
      { type: 'patchStatus' }
    >
  )?.status.monitoring as Monitoring | undefined;

const onConnector = (a: Action) => a.type === 'patchStatus' && a.ref.kind === 'Connector';

describe('planMonitoring', () => {
  it('fills data model, subscription and pipeline from the source and target workers', () => {
    const actions = plan({ src: { figures: source(10) }, tgt: { figures: target(8, 2) } });
    expect(monitoringOf(actions, 'dm')).toMatchObject({
      messagesIn: 10,
      messagesOut: 10,
      errors: 2,
      reportedAt: NOW,
    });
    expect(monitoringOf(actions, 'sub')).toMatchObject({ messagesIn: 10, messagesOut: 10, errors: 2 });
    const p = monitoringOf(actions, 'p');
    expect(p).toMatchObject({
      messagesIn: 10,
      messagesOut: 10,
      errors: 2,
      lastEventTime: '2026-11-23T11:59:58.000Z',
    });
    // 8 of 10 under 100 ms: p50 inside the first bucket, p95 in the second.
    expect(p?.latencyMs).toEqual({ p50: 62.5, p95: 775, p99: 955, samples: 10 });
  });

  it('adds what a worker counted since the last read, and writes nothing when nothing moved', () => {
    const first = plan({ src: { figures: source(10) }, tgt: { figures: target(10) } });
    const d = monitoringOf(first, 'dm')!;
    const s = monitoringOf(first, 'sub')!;
    const p = monitoringOf(first, 'p')!;
    const next = plan(
      {
        src: { figures: source(15), previous: source(10) },
        tgt: { figures: target(12), previous: target(10) },
      },
      { d, s, p },
      LATER,
    );
    expect(monitoringOf(next, 'dm')).toMatchObject({ messagesIn: 15, messagesOut: 12, reportedAt: LATER });
    const still = plan(
      {
        src: { figures: source(10), previous: source(10) },
        tgt: { figures: target(10), previous: target(10) },
      },
      { d, s, p },
      LATER,
    );
    expect(still).toEqual([]);
  });

  it('keeps counting across a worker restart, and adds nothing twice after an operator restart', () => {
    const d: Monitoring = { messagesIn: 100, messagesOut: 90, errors: 0, reportedAt: NOW };
    // A new run (started after the last report): all it counted is new.
    const restarted = plan({ src: { figures: source(5, Date.parse(NOW) + 1000) } }, { d }, LATER);
    expect(monitoringOf(restarted, 'dm')).toMatchObject({ messagesIn: 105 });
    // The same run, first read by a new operator: already reported by the previous one.
    const adopted = plan({ src: { figures: source(5, Date.parse(NOW) - 60_000) } }, { d }, LATER);
    expect(monitoringOf(adopted, 'dm')?.messagesIn ?? 100).toBe(100);
  });

  it("writes the slot's retained WAL on the connector and the figures, ignoring small moves", () => {
    const actions = plan({ src: { figures: source(1, undefined, 500_000) } });
    expect(actions).toContainEqual({
      type: 'patchStatus',
      ref: { kind: 'Connector', namespace: 'ns', name: 'src' },
      status: { replicationSlot: { name: 'slot_a', retainedWalBytes: 500_000, measuredAt: NOW } },
    });
    expect(monitoringOf(actions, 'p')?.retainedWalBytes).toBe(500_000);
    const measured = {
      ...src,
      status: { replicationSlot: { name: 'slot_a', retainedWalBytes: 500_000, measuredAt: NOW } },
    } as ConnectorResource;
    const small = plan({ src: { figures: source(1, undefined, 510_000) } }, { connectors: [measured] });
    expect(small.filter(onConnector)).toEqual([]);
    // Crossing the threshold (1,000,000 here) is always written.
    const nearby = {
      ...measured,
      status: { replicationSlot: { name: 'slot_a', retainedWalBytes: 990_000, measuredAt: NOW } },
    } as ConnectorResource;
    const crossing = plan({ src: { figures: source(1, undefined, 1_001_000) } }, { connectors: [nearby] });
    expect(crossing.filter(onConnector)).toHaveLength(1);
  });

  it('leaves objects alone whose workers were not read', () => {
    expect(plan({})).toEqual([]);
  });
});
