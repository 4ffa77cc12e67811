import { afterAll, beforeAll, expect, it } from '@jest/globals';
import type { Admin } from '@platformatic/kafka';
import { CAPTURE_RELEASED_ANNOTATION, type ConnectorResource } from '@sluice/shared/catalog';
import { newProducer, topicExists } from '@sluice/testing/kafka-helpers';
import { describeWithKube } from '@sluice/testing/kube';
import { setupTeam, type TeamSetup } from './catalog-fixtures.js';
import type { TestGateway } from './harness.js';
import { startKubeBrokerGateway, type KubeBrokerGateway } from './kube-broker-gateway.js';

// A MariaDB source keeps its binary log position in a compacted topic of the
// platform broker, `sluice-position.<id>`. Deleting the connector removes
// it, on the real API server and broker: through the API, and with kubectl
// (the operator's finalizer, run in the gateway's process, waits for the
// gateway's release); a connector whose topic was never made (never
// started) goes at once. Other connectors' topics stay.

describeWithKube('deleting a MariaDB source removes its position topic', () => {
  let k: KubeBrokerGateway;
  let gw: TestGateway;
  let namespace = '';
  let admin: Admin;
  let t: TeamSetup;
  const topics: string[] = [];

  beforeAll(async () => {
    k = await startKubeBrokerGateway('posrel');
    ({ gw, namespace, admin } = k);
    t = await setupTeam(gw, 'position-release');
  }, 120_000);
  afterAll(() => k?.close(topics));

  /** A MariaDB source (never started: no worker runs here); with `position`, its topic as a worker leaves it. */
  const create = async (name: string, position: boolean) => {
    const res = await gw.http
      .post('/api/connectors/')
      .set(t.owner.auth)
      .send({
        name,
        connector_type: 'MARIADB_SOURCE',
        team_id: t.teamId,
        json_configuration: {
          host: '127.0.0.1',
          port: 3306,
          user: 'sluice',
          password: 'not-used-here',
          database: 'shop',
          whitelist: ['shop.orders'],
        },
      });
    expect(res.status).toBe(201);
    const id = res.body.id as string;
    const topic = `sluice-position.${id}`;
    if (position) {
      topics.push(topic);
      await admin.createTopics({
        topics: [topic],
        partitions: 1,
        replicas: 1,
        configs: [{ name: 'cleanup.policy', value: 'compact' }],
      });
      const producer = newProducer(k.brokers);
      await producer.send({
        messages: [
          { topic, key: id, value: JSON.stringify({ file: 'binlog.000001', offset: 4, gtid: '0-1-1' }) },
        ],
      });
      await producer.close();
      expect(await topicExists(admin, topic)).toBe(true);
    }
    // The operator's finalizer is on before the delete, as for any connector it has seen.
    await until(
      async () =>
        ((await gw.ctx.cluster.get('Connector', namespace, id))?.metadata.finalizers ?? []).length > 0,
    );
    return { id, topic };
  };
  const gone = (id: string) =>
    until(async () => (await gw.ctx.cluster.get('Connector', namespace, id)) === undefined);

  it('through the API: its topic goes, another connector’s stays', async () => {
    const mine = await create('maria-api', true);
    const other = await create('maria-other', true);
    const del = await gw.http.delete(`/api/connectors/${mine.id}`).set(t.owner.auth);
    expect(del.status).toBe(204);
    await until(async () => !(await topicExists(admin, mine.topic)));
    await gone(mine.id);
    expect(await topicExists(admin, other.topic)).toBe(true);
  }, 90_000);

  it('with kubectl: the finalizer waits for the gateway to delete the topic, then the connector goes', async () => {
    const { id, topic } = await create('maria-kubectl', true);
    const seen: (string | undefined)[] = [];
    await gw.ctx.cluster.delete('Connector', namespace, id);
    await until(async () => {
      const c = await gw.ctx.cluster.get<ConnectorResource>('Connector', namespace, id);
      seen.push(c?.metadata.annotations?.[CAPTURE_RELEASED_ANNOTATION]);
      return c === undefined;
    });
    expect(await topicExists(admin, topic)).toBe(false);
    // What the gateway recorded, if the connector was read between the release and its end.
    expect(seen.filter((s) => s !== undefined).every((s) => s === 'dropped')).toBe(true);
  }, 90_000);

  it('a source never started (no topic) goes at once', async () => {
    const { id, topic } = await create('maria-never-started', false);
    const started = Date.now();
    await gw.ctx.cluster.delete('Connector', namespace, id);
    await gone(id);
    // Well under the operator's 2-minute wait: there was nothing to delete, and the gateway said so.
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(await topicExists(admin, topic)).toBe(false);
  }, 90_000);
});

async function until(test: () => Promise<boolean>, ms = 30_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await test())) {
    if (Date.now() > deadline) throw new Error(`not true after ${ms} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
