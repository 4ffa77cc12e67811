import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Admin } from '@platformatic/kafka';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { countingListener, hostPort, type CountingListener } from '@sluice/testing/counting-listener';
import { setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';
import { poster } from './preflight-fixtures.js';

// The gateway's Kafka pre-flight checks dial brokers through the workers'
// client code, under the gateway's outbound policy: every broker, the
// bootstrap list and those the cluster's metadata names, in every IPv6
// spelling of a denied IPv4 address. The gateway here may reach 127.0.0.2
// only; the real broker, behind a counting proxy on 127.0.0.2, advertises
// itself at 127.0.0.1, which the default policy denies.

const run = randomUUID().slice(0, 8);

describeWithKafka('Kafka pre-flight checks under the outbound policy (real broker)', () => {
  describe.each(databaseKinds())('on %s', (kind) => {
    const brokers = testKafkaBrokers() ?? [];
    const broker = hostPort(brokers[0] ?? '');
    const topic = `preflight-outbound-${kind}-${run}`;
    let gw: TestGateway;
    let t: TeamSetup;
    let admin: Admin;
    let front: CountingListener;
    let loopback: CountingListener;

    beforeAll(async () => {
      gw = await startTestGateway(kind, { SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.2/32' });
      t = await setupTeam(gw, `preflight-outbound-${kind}`);
      admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
      await admin.createTopics({ topics: [topic], partitions: 1, replicas: 1 });
      front = await countingListener('127.0.0.2', broker);
      loopback = await countingListener('127.0.0.1');
    }, 60_000);
    afterAll(async () => {
      await front?.close();
      await loopback?.close();
      await admin?.close();
      await gw?.close();
    });

    const post = poster(
      () => gw,
      () => t,
      'kafka-source/',
    );

    it('refuses a broker the metadata names at a denied address, though the bootstrap address is allowed', async () => {
      const via = `127.0.0.2:${front.port}`;
      const advertised = `broker ${broker.host}:${broker.port} is refused by the outbound policy`;
      const checked = await post('check-credentials', { bootstrap_servers: via });
      expect(checked.status).toBe(200);
      expect(checked.body).toEqual({ ok: false, message: expect.stringContaining(`The ${advertised}`) });
      const fetched = await post('fetch-messages', { bootstrap_servers: via, topic });
      expect(fetched.status).toBe(400);
      expect(fetched.body.detail).toContain(`The ${advertised}`);
      // The bootstrap address itself was reached.
      expect(front.accepted()).toBeGreaterThan(0);
    });

    it.each(['0.0.0.0', '[::127.0.0.1]', '[::ffff:127.0.0.1]', '[64:ff9b::7f00:1]', '[2002:7f00:1::]'])(
      'refuses a bootstrap broker at %s without connecting',
      async (host) => {
        const before = loopback.accepted();
        const started = Date.now();
        const res = await post('check-credentials', { bootstrap_servers: `${host}:${loopback.port}` });
        expect(res.body).toEqual({
          ok: false,
          message: expect.stringMatching(
            /is refused by the outbound policy: Connections to .* are not allowed/,
          ),
        });
        expect(Date.now() - started).toBeLessThan(5_000);
        expect(loopback.accepted()).toBe(before);
      },
    );
  });
});
