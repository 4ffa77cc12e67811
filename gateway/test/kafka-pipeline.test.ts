import { expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describeWithKafka, testKafkaBrokers, testKafkaSecurity } from '@sluice/testing/kafka';
import { eventually, readTopic, topicSize } from '@sluice/testing/kafka-helpers';
import { reachState } from './catalog-fixtures.js';
import { kafkaPipelineFixture } from './kafka-pipeline-setup.js';

// Kafka → mapper → Kafka end to end as a user drives it: the REST API, the
// embedded operator, the real worker program under the process runtime, the
// real broker. The source is reached with SASL and its password, given
// inline, goes through the secret store to the workers' environment.

describeWithKafka('a Kafka → Kafka pipeline through the REST API (real workers, real broker)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const security = testKafkaSecurity();
  const run = randomUUID().slice(0, 8);
  const source = `orders-${run}`;
  const out = `orders-out-${run}`;
  const s = kafkaPipelineFixture('pglite', 'kafka-e2e', brokers, source);

  const get = (path: string) => s.gw.http.get(path).set(s.t.owner.auth);
  const stateOf = (path: string, state: string) => reachState(s.gw, s.t.owner, path, state);
  const produce = (ids: number[]) =>
    s.producer.send({
      messages: ids.map((id) => ({
        topic: source,
        value: JSON.stringify({ order: { id, total: `${id}.25` } }),
      })),
    });
  const outIds = async () =>
    (await readTopic(brokers, s.admin, out)).map(
      (m) => (JSON.parse(m.value) as { order_id: number }).order_id,
    );

  it('start → live, messages mapped onto the target topic; pause → paused with no worker left; resume loses nothing', async () => {
    const sourceConfig = security
      ? {
          topic: source,
          bootstrap_servers: security.saslPlaintextBrokers.join(','),
          security_protocol: 'SASL_PLAINTEXT',
          sasl_mechanism: 'SCRAM-SHA-512',
          sasl_username: security.username,
          sasl_password: security.password,
        }
      : { topic: source, bootstrap_servers: brokers.join(',') };
    const created = await s.gw.http
      .post('/api/pipelines/')
      .set(s.t.owner.auth)
      .send({
        name: `kafka-e2e-${run}`,
        team_id: s.t.teamId,
        source_name: `kafka-e2e-src-${run}`,
        source_type: 'KAFKA_SOURCE',
        source_config: sourceConfig,
        target_name: `kafka-e2e-dst-${run}`,
        target_type: 'KAFKA_TARGET',
        target_config: { bootstrap_server: brokers.join(',') },
        subscription_target_table_name: out,
        subscription_backfill: true,
        subscription_mapper_config: [
          { key: 'order_id', path: 'order|id', cast: 'int', primary_key: true },
          { key: 'total', path: 'order|total', cast: 'float' },
        ],
      });
    expect(created.status).toBe(201);
    const id = created.body.id as string;

    expect((await s.gw.http.post(`/api/pipelines/${id}/start`).set(s.t.owner.auth)).body).toBe('BUILDING');
    await stateOf(`/api/pipelines/${id}`, 'live');

    await produce([1, 2, 3, 4, 5]);
    const first = await eventually(outIds, (ids) => ids.length >= 5);
    expect(first.sort()).toEqual([1, 2, 3, 4, 5]);
    const row = (await readTopic(brokers, s.admin, out)).find((m) => m.key === '{"order_id":3}');
    expect(JSON.parse(row!.value)).toEqual({ order_id: 3, total: 3.25 });

    const pipeline = (await get(`/api/pipelines/${id}`)).body as Record<string, string>;
    expect((await s.gw.http.post(`/api/pipelines/${id}/pause`).set(s.t.owner.auth)).body).toBe('PAUSED');
    await stateOf(`/api/connectors/${pipeline.source_connector_id}`, 'paused');
    await stateOf(`/api/connectors/${pipeline.target_connector_id}`, 'paused');
    expect((await get(`/api/pipelines/${id}`)).body.state).toBe('paused');
    // The process runtime removes a worker's directory once its process has exited.
    const workDir = join(s.gw.dataDir, 'workers');
    expect(existsSync(workDir) ? readdirSync(workDir) : []).toEqual([]);

    // Messages produced while paused are delivered after the resume.
    await produce([6, 7]);
    expect(await topicSize(s.admin, out)).toBe(5);
    await s.gw.http.post(`/api/pipelines/${id}/start`).set(s.t.owner.auth);
    await stateOf(`/api/pipelines/${id}`, 'live');
    const all = await eventually(outIds, (ids) => new Set(ids).size >= 7);
    expect([...new Set(all)].sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
  }, 180_000);
});
