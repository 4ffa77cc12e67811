import { describe, expect, it } from '@jest/globals';
import {
  type BinlogStatus,
  type Condition,
  type ConnectorResource,
  type SubscriptionResource,
} from '@sluice/shared/catalog';
import { MetricsRegistry, WORKER_METRICS } from '@sluice/shared/metrics';
import { degradedOf, pausedSource, statusOf } from '../../test/degraded-fixtures.js';
import { pipeline as pipelineOf } from '../../test/plan-fixtures.js';
import { planMonitoring } from '../monitoring/monitoring-plan.js';
import { parsePrometheusText } from '../monitoring/prometheus-text.js';
import { workerFigures } from '../monitoring/worker-figures.js';
import type { Action } from './actions.js';
import { planConnector } from './connector/connector.plan.js';
import { planPipeline } from './pipeline/pipeline.plan.js';

// The purge guard of a MariaDB/MySQL source: from what its worker's /metrics
// say to the connector's status.binlog (the monitoring collector's plan), and
// from there to the Degraded condition of the connector and its pipeline.

const NOW = '2026-11-23T12:00:00Z';
const LATER = '2026-11-23T12:05:00Z';
const MiB = 1024 * 1024;
const ID = '0b6f1c2e-1111-4aaa-8bbb-000000000002';

const paused = (binlog?: BinlogStatus, conditions?: Condition[]): ConnectorResource =>
  pausedSource({ name: 'maria', connectorType: 'MARIADB_SOURCE' }, ID, binlog ? { binlog } : {}, conditions);
const binlog = (over: Partial<BinlogStatus>): BinlogStatus => ({
  neededFile: 'binlog.000007',
  oldestFile: 'binlog.000005',
  currentFile: 'binlog.000009',
  logsBeforeNeeded: 2,
  lagBytes: 3 * MiB,
  heldBytes: 10 * MiB,
  expireSeconds: 7 * 86_400,
  measuredAt: NOW,
  ...over,
});

const connectorPlan = (c: ConnectorResource, now = NOW) =>
  planConnector({ connector: c, datamodels: [], subscriptions: [], worker: undefined, now });
describe('a MariaDB source worker measuring its binary logs', () => {
  /** The worker's /metrics as its binary log watch writes them. */
  const metrics = (neededFile: string, before: number) => {
    const r = new MetricsRegistry();
    r.gauge(WORKER_METRICS.binlogLagBytes, 'lag').set({}, 2 * MiB);
    r.gauge(WORKER_METRICS.binlogHeldBytes, 'held').set({}, 4 * MiB);
    r.gauge(WORKER_METRICS.binlogExpireSeconds, 'expire').set({}, 0);
    r.gauge(WORKER_METRICS.sourceEventsRate, 'events').set({}, 1234.5);
    r.gauge(WORKER_METRICS.sourceTransactionsRate, 'transactions').set({}, 12.3);
    r.gauge(WORKER_METRICS.binlogLogsBeforeNeeded, 'before').set(
      { needed_file: neededFile, oldest_file: 'binlog.000003', current_file: 'binlog.000004' },
      before,
    );
    return r.render();
  };
  const collect = (c: ConnectorResource, text: string, now = NOW) =>
    planMonitoring({
      connectors: [c],
      datamodels: [],
      subscriptions: [],
      pipelines: [],
      workers: new Map([
        [`${c.metadata.namespace}/${c.metadata.name}`, { figures: workerFigures(parsePrometheusText(text)) }],
      ]),
      slotWalDegradedBytes: 1024 ** 3,
      now,
    });

  it('writes the figures to the connector, and the connector is Degraded when its log is the oldest held', () => {
    const writes = collect(paused(), metrics('binlog.000003', 0));
    expect(writes).toEqual([
      {
        type: 'patchStatus',
        ref: { kind: 'Connector', namespace: 'ns', name: ID },
        status: {
          binlog: {
            neededFile: 'binlog.000003',
            oldestFile: 'binlog.000003',
            currentFile: 'binlog.000004',
            logsBeforeNeeded: 0,
            lagBytes: 2 * MiB,
            heldBytes: 4 * MiB,
            expireSeconds: 0,
            eventsPerSecond: 1234.5,
            transactionsPerSecond: 12.3,
            measuredAt: NOW,
          },
        },
      },
    ]);
    const measured = paused(
      (writes[0] as Extract<Action, { type: 'patchStatus' }>).status.binlog as BinlogStatus,
    );
    // The same figures again: nothing to write.
    expect(collect(measured, metrics('binlog.000003', 0), LATER)).toEqual([]);
    const plan = connectorPlan(measured);
    expect(degradedOf(plan)).toMatchObject({ status: 'True', reason: 'BinaryLogRetention' });
    expect(degradedOf(plan)?.message).toBe(
      `This connector resumes from the binary log binlog.000003, the oldest the server holds: the next purge ` +
        `removes it (2.0 MiB behind the server's position in binlog.000004, measured ${NOW}). Once it is purged ` +
        'the connector cannot resume without a new snapshot: start the pipeline so the connector catches up, or ' +
        'keep binary logs longer than the connector may be stopped (binlog_expire_logs_seconds)',
    );
    expect(plan.actions).toContainEqual(
      expect.objectContaining({ type: 'event', eventType: 'Warning', reason: 'BinaryLogRetention' }),
    );
  });

  it('says a purged log is purged, and what to do', () => {
    const writes = collect(paused(), metrics('binlog.000002', -1));
    const measured = paused(
      (writes[0] as Extract<Action, { type: 'patchStatus' }>).status.binlog as BinlogStatus,
    );
    const degraded = degradedOf(connectorPlan(measured));
    expect(degraded).toMatchObject({ status: 'True', reason: 'BinaryLogPurged' });
    expect(degraded?.message).toContain(
      'The server no longer holds the binary log binlog.000002 this connector resumes from (oldest held: binlog.000003',
    );
    expect(degraded?.message).toContain(
      'by a snapshot backfill of all its data models into all their targets',
    );
    expect(degraded?.message).toContain(`deleting the topic sluice-position.${ID} of the platform broker`);
  });
});

describe('the Degraded condition of binary logs about to be purged', () => {
  it('is not set while the needed log is the current one, or older ones go first and little is behind', () => {
    const current = { neededFile: 'binlog.000009', logsBeforeNeeded: 4, lagBytes: 100 };
    expect(degradedOf(connectorPlan(paused(binlog(current))))?.status).toBe('False');
    // The current log is never purged, even when it is the only one.
    const only = { ...current, oldestFile: 'binlog.000009', logsBeforeNeeded: 0 };
    expect(degradedOf(connectorPlan(paused(binlog(only))))?.status).toBe('False');
    expect(degradedOf(connectorPlan(paused(binlog({}))))?.status).toBe('False');
  });

  it('is set once 80 % of the bytes held by age are behind the capture, and clears when it catches up', () => {
    const behind = binlog({ lagBytes: 8 * MiB });
    const plan = connectorPlan(paused(behind));
    expect(degradedOf(plan)).toMatchObject({ status: 'True', reason: 'BinaryLogRetention' });
    expect(degradedOf(plan)?.message).toContain(
      '80 % of the 10.0 MiB of binary logs the server holds are behind it, and the server purges logs older than 7 d',
    );
    // A server that does not purge by age: the share alone says nothing.
    expect(degradedOf(connectorPlan(paused(binlog({ lagBytes: 8 * MiB, expireSeconds: 0 }))))?.status).toBe(
      'False',
    );
    const conditions = statusOf(plan)?.conditions as Condition[];
    const caughtUp = binlog({
      neededFile: 'binlog.000009',
      logsBeforeNeeded: 4,
      lagBytes: 0,
      measuredAt: LATER,
    });
    expect(degradedOf(connectorPlan(paused(caughtUp, conditions), LATER))).toMatchObject({
      status: 'False',
      lastTransitionTime: LATER,
    });
  });

  it('makes the pipeline of that source Degraded too', () => {
    const source = paused(binlog({ logsBeforeNeeded: -1 }));
    const other = { ...paused(), metadata: { ...paused().metadata, name: 'tgt' } } as ConnectorResource;
    const pipeline = pipelineOf(
      {
        desiredState: 'paused',
        ownsSource: false,
        ownsTarget: false,
        sourceConnectorId: ID,
        targetConnectorId: 'tgt',
      },
      { name: 'p' },
    );
    const subscription = {
      metadata: { name: 's', namespace: 'ns' },
      spec: { enabled: false },
    } as SubscriptionResource;
    const plan = planPipeline({ pipeline, source, target: other, subscription, now: NOW });
    expect(degradedOf(plan)).toMatchObject({ status: 'True', reason: 'BinaryLogPurged' });
  });
});
