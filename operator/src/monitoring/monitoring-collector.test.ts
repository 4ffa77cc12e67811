import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createServer, type Server } from 'node:http';
import type { DataModelResource, SubscriptionResource } from '@sluice/shared/catalog';
import type { ClusterObject, ClusterPort, SluiceKind, WorkerRuntimePort } from '@sluice/shared/ports';
import { datamodel, subscription } from '../../test/plan-fixtures.js';
import { silentLogger } from '../controller/logger.js';
import { MetricsRegistry } from '@sluice/shared/metrics';
import { MonitoringCollector } from './monitoring-collector.js';

// The collector against a real HTTP /metrics (the worker's own registry) and
// stand-ins of the cluster and the runtime: it writes what changed, once per
// round, and nothing when nothing moved.

describe('MonitoringCollector', () => {
  const registry = new MetricsRegistry();
  registry
    .gauge('sluice_worker_start_time_seconds', 'start')
    .set({}, Date.parse('2026-11-23T11:00:00Z') / 1000);
  const out = registry.counter('sluice_worker_messages_out_total', 'out');
  let server: Server;
  let url = '';
  const writes: { name: string; status: Record<string, unknown> }[] = [];
  const meta = (name: string) => ({ name, namespace: 'ns' });
  const sub: SubscriptionResource = {
    ...subscription({ datamodelId: 'dm', targetConnectorId: 'tgt' }, meta('sub')),
    status: {},
  };
  const dm: DataModelResource = { ...datamodel({ connectorId: 'src' }, meta('dm')), status: {} };
  // Stand-ins of the two ports the collector reads and writes through.
  const cluster: Pick<ClusterPort, 'patchStatus'> = {
    async patchStatus<T extends ClusterObject>(
      _kind: SluiceKind,
      _ns: string,
      name: string,
      status: Record<string, unknown>,
    ): Promise<T> {
      writes.push({ name, status });
      // As the API server would: the next round reads what was written.
      const o = name === 'sub' ? sub : dm;
      o.status = { ...o.status, ...status };
      return o as T;
    },
  };
  const runtime: Pick<WorkerRuntimePort, 'list' | 'metricsUrl'> = {
    list: async () => [{ id: 'ns/tgt', phase: 'ready', configHash: 'h', restarts: 0 }],
    metricsUrl: async (id) => (id === 'ns/tgt' ? url : undefined),
  };
  let now = '2026-11-23T12:00:00Z';

  beforeAll(async () => {
    server = createServer((req, res) => {
      if (req.url !== '/metrics') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/plain' }).end(registry.render());
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const address = server.address();
    url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/metrics`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const collector = () =>
    new MonitoringCollector({
      cluster,
      runtime,
      catalog: () => ({ connectors: [], datamodels: [dm], subscriptions: [sub], pipelines: [] }),
      log: silentLogger,
      intervalMs: 60_000,
      slotWalDegradedBytes: 1024 ** 3,
      now: () => now,
    });

  it('writes the figures that changed, once per object per round, and nothing when nothing moved', async () => {
    const c = collector();
    out.inc({ subscription: 'sub' }, 4);
    expect(await c.collect()).toBe(2); // the subscription and its data model
    expect(writes.find((w) => w.name === 'sub')?.status).toEqual({
      monitoring: { messagesIn: 0, messagesOut: 4, errors: 0, reportedAt: now },
    });
    writes.length = 0;
    now = '2026-11-23T12:00:15Z';
    expect(await c.collect()).toBe(0);
    out.inc({ subscription: 'sub' }, 3);
    now = '2026-11-23T12:00:30Z';
    await c.collect();
    expect(writes.find((w) => w.name === 'sub')?.status).toMatchObject({
      monitoring: { messagesOut: 7, reportedAt: now },
    });
  });

  it('skips a worker whose /metrics cannot be read', async () => {
    writes.length = 0;
    const c = collector();
    await new Promise<void>((r) => server.close(() => r()));
    expect(await c.collect()).toBe(0);
    server.listen(0, '127.0.0.1');
  });
});

describe('MonitoringCollector, a target of several replicas', () => {
  /** One instance's /metrics: its own registry, started at `startedAt`. */
  const instance = async (startedAt: string) => {
    const registry = new MetricsRegistry();
    registry.gauge('sluice_worker_start_time_seconds', 'start').set({}, Date.parse(startedAt) / 1000);
    const out = registry.counter('sluice_worker_messages_out_total', 'out');
    const server = createServer((_req, res) => void res.writeHead(200).end(registry.render()));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const address = server.address();
    const url = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/metrics`;
    return { out, url, close: () => new Promise<void>((r) => server.close(() => r())) };
  };

  it("adds up every instance's figures, counts a new instance from zero and forgets one gone", async () => {
    const a = await instance('2026-11-23T11:00:00Z');
    const b = await instance('2026-11-23T12:00:20Z');
    const sub: SubscriptionResource = {
      ...subscription({ datamodelId: 'dm', targetConnectorId: 'tgt' }, { name: 'sub', namespace: 'ns' }),
      status: {},
    };
    let urls = [a.url];
    const cluster: Pick<ClusterPort, 'patchStatus'> = {
      async patchStatus<T extends ClusterObject>(
        _k: SluiceKind,
        _ns: string,
        name: string,
        status: Record<string, unknown>,
      ): Promise<T> {
        if (name === 'sub') sub.status = { ...sub.status, ...status };
        return sub as T;
      },
    };
    let now = '2026-11-23T12:00:00Z';
    const c = new MonitoringCollector({
      cluster,
      runtime: {
        list: async () => [{ id: 'ns/tgt', phase: 'ready', configHash: 'h', restarts: 0 }],
        metricsUrl: async () => urls[0],
        metricsUrls: async () => urls,
      },
      catalog: () => ({ connectors: [], datamodels: [], subscriptions: [sub], pipelines: [] }),
      log: silentLogger,
      intervalMs: 60_000,
      slotWalDegradedBytes: 1024 ** 3,
      now: () => now,
    });
    const messagesOut = () => sub.status?.monitoring?.messagesOut;
    try {
      a.out.inc({ subscription: 'sub' }, 10);
      await c.collect();
      expect(messagesOut()).toBe(10);
      // Scaled to 2: the new instance's messages count in full, the first one's by its delta.
      urls = [a.url, b.url];
      a.out.inc({ subscription: 'sub' }, 5);
      b.out.inc({ subscription: 'sub' }, 7);
      now = '2026-11-23T12:00:30Z';
      await c.collect();
      expect(messagesOut()).toBe(22);
      a.out.inc({ subscription: 'sub' }, 1);
      b.out.inc({ subscription: 'sub' }, 2);
      now = '2026-11-23T12:00:45Z';
      await c.collect();
      expect(messagesOut()).toBe(25);
      // Back to 1: the instance gone counts no more; the other goes on by its delta.
      urls = [b.url];
      b.out.inc({ subscription: 'sub' }, 4);
      now = '2026-11-23T12:01:00Z';
      await c.collect();
      expect(messagesOut()).toBe(29);
    } finally {
      await a.close();
      await b.close();
    }
  });
});
