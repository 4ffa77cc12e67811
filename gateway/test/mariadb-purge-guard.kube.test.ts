import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Admin } from '@platformatic/kafka';
import mysql from 'mysql2/promise';
import type { Condition, ConnectorResource } from '@sluice/shared/catalog';
import { newProducer } from '@sluice/testing/kafka-helpers';
import { describeWithKube } from '@sluice/testing/kube';
import { SlotMonitor } from '../src/features/monitoring/monitoring.runner.js';
import { setupTeam, type TeamSetup } from './catalog-fixtures.js';
import type { TestGateway } from './harness.js';
import { startKubeBrokerGateway, type KubeBrokerGateway } from './kube-broker-gateway.js';

// The purge guard of a paused MariaDB source, on the real server, broker and
// API server, with the operator's control loop in the gateway's process: no
// worker runs, so the gateway's monitoring round reads the position recorded
// on the platform broker and the server's binary logs into the connector's
// status, and the operator makes the connector Degraded when the log that
// position needs is the oldest the server holds (the next purge removes it)
// or is gone, and not when it is the current one. The server is shared: the
// test rotates its logs (FLUSH BINARY LOGS takes nothing from anyone) and
// purges none; the positions name the logs (as a stopped worker's would).

function mysqlUrl(): URL {
  const url = process.env.SLUICE_TEST_MYSQL_URL;
  if (!url) throw new Error('needs SLUICE_TEST_MYSQL_URL (scripts/with-mariadb.sh)');
  return new URL(url);
}

describeWithKube('a paused MariaDB source whose binary log is about to be purged is Degraded', () => {
  let k: KubeBrokerGateway;
  let gw: TestGateway;
  let namespace = '';
  let admin: Admin;
  let t: TeamSetup;
  let conn: mysql.Connection;
  let id = '';
  const topic = () => `sluice-position.${id}`;

  beforeAll(async () => {
    const u = mysqlUrl();
    conn = await mysql.createConnection({
      host: u.hostname,
      port: Number(u.port),
      user: decodeURIComponent(u.username),
      password: decodeURIComponent(u.password),
    });
    k = await startKubeBrokerGateway('purge', {
      SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128',
      SLUICE_MONITORING_INTERVAL_MS: '100',
    });
    ({ gw, namespace, admin } = k);
    t = await setupTeam(gw, 'purge-guard');
    const res = await gw.http
      .post('/api/connectors/')
      .set(t.owner.auth)
      .send({
        name: 'maria-paused',
        connector_type: 'MARIADB_SOURCE',
        team_id: t.teamId,
        json_configuration: {
          host: u.hostname,
          port: Number(u.port),
          user: decodeURIComponent(u.username),
          password: decodeURIComponent(u.password),
          database: u.pathname.slice(1),
          ssl_mode: 'disabled',
          whitelist: [`${u.pathname.slice(1)}.orders`],
        },
      });
    expect(res.status).toBe(201);
    id = res.body.id as string;
    await admin.createTopics({
      topics: [topic()],
      partitions: 1,
      replicas: 1,
      configs: [{ name: 'cleanup.policy', value: 'compact' }],
    });
    // At least two logs: the oldest is then not the current one.
    await conn.query('flush binary logs');
  }, 120_000);
  afterAll(async () => {
    await conn?.end();
    await k?.close([topic()]);
  });

  const held = async () => {
    const [rows] = await conn.query('show binary logs');
    return (rows as { Log_name: string }[]).map((r) => r.Log_name);
  };
  /** Records a position in `file`, as a worker stopped there would have. */
  const stoppedAt = async (file: string) => {
    const producer = newProducer(k.brokers);
    await producer.send({
      messages: [
        { topic: topic(), key: id, value: JSON.stringify({ file, offset: 4, gtid: '', written_ms: 0 }) },
      ],
    });
    await producer.close();
  };
  /** The gateway's monitoring rounds until the connector's Degraded condition passes `test`. */
  const degradedUntil = async (
    test: (c: Condition | undefined) => boolean,
  ): Promise<Condition | undefined> => {
    const monitor = new SlotMonitor(gw.ctx);
    const deadline = Date.now() + 30_000;
    for (;;) {
      await monitor.tick();
      const c = await gw.ctx.cluster.get<ConnectorResource>('Connector', namespace, id);
      const degraded = c?.status?.conditions?.find((x) => x.type === 'Degraded');
      if (test(degraded)) return degraded;
      if (Date.now() > deadline)
        throw new Error(`Degraded is ${JSON.stringify(degraded)}; status ${JSON.stringify(c?.status)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  /** The `binlog` of GET /api/datamodels/{id}/monitoring of its data model, once it passes `test`. */
  const monitoredBinlog = async (test: (b: Record<string, unknown> | null) => boolean) => {
    const list = await gw.http.get(`/api/datamodels/?connector_id=${id}`).set(t.owner.auth);
    const dm = (list.body as { items: { id: string }[] }).items[0]!.id;
    const deadline = Date.now() + 30_000;
    for (;;) {
      const res = await gw.http.get(`/api/datamodels/${dm}/monitoring`).set(t.owner.auth);
      expect(res.status).toBe(200);
      const b = res.body.binlog as Record<string, unknown> | null;
      if (test(b)) return b as Record<string, number | string>;
      if (Date.now() > deadline) throw new Error(`the monitoring shows ${JSON.stringify(res.body)}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  it('is Degraded while its log is the oldest held, not once it needs the current one', async () => {
    const logs = await held();
    await stoppedAt(logs[0]!);
    const degraded = await degradedUntil((c) => c?.status === 'True');
    expect(degraded).toMatchObject({ reason: 'BinaryLogRetention' });
    expect(degraded?.message).toContain(
      `This connector resumes from the binary log ${logs[0]}, the oldest the server holds: the next purge removes it`,
    );
    expect(degraded?.message).toContain('start the pipeline so the connector catches up');
    // The REST monitoring of its data model shows the figures the guard judged by.
    const binlog = await monitoredBinlog((b) => b?.needed_file === logs[0]);
    expect(binlog).toMatchObject({
      needed_file: logs[0],
      oldest_file: logs[0],
      logs_before_needed: 0,
      events_per_second: 0,
    });
    expect(logs).toContain(binlog.current_file);
    expect(binlog.lag_bytes).toBeGreaterThan(0);
    expect(binlog.held_bytes).toBeGreaterThanOrEqual(binlog.lag_bytes as number);

    await stoppedAt((await held()).at(-1)!);
    const cleared = await degradedUntil((c) => c?.status === 'False');
    expect(cleared?.reason).not.toBe('BinaryLogRetention');
  }, 90_000);

  it('is Degraded once its log is purged, saying how to take a new snapshot', async () => {
    const oldest = (await held())[0]!;
    const n = Number(/\.(\d+)$/.exec(oldest)![1]);
    const purged = `${oldest.replace(/\d+$/, '')}${String(n - 1).padStart(6, '0')}`;
    await stoppedAt(purged);
    const degraded = await degradedUntil((c) => c?.reason === 'BinaryLogPurged');
    expect(degraded?.status).toBe('True');
    expect(degraded?.message).toContain(`The server no longer holds the binary log ${purged}`);
    expect(degraded?.message).toContain(`deleting the topic ${topic()} of the platform broker`);
  }, 90_000);
});
