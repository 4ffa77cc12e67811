import { afterAll, beforeAll } from '@jest/globals';
import { Admin, type Producer } from '@platformatic/kafka';
import { newProducer } from '@sluice/testing/kafka-helpers';
import { closeScanned, reachState, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import type { DbKind, TestGateway } from './harness.js';
import { startWorkerGateway } from './worker-gateway.js';

/**
 * What a Kafka pipeline test through the REST API runs against: a gateway
 * whose embedded operator runs the built worker program (process runtime),
 * a team, and a source topic of two partitions on the test broker with a
 * producer for it. `close` closes the producer and the admin client, then
 * the gateway after the leak scan.
 */
export interface KafkaPipelineSetup {
  gw: TestGateway;
  t: TeamSetup;
  admin: Admin;
  producer: Producer<string, string, string, string>;
  /** The source topic. */
  source: string;
  brokers: string[];
  close(): Promise<void>;
}

export async function startKafkaPipelineSetup(
  kind: DbKind,
  team: string,
  brokers: string[],
  sourceTopic: string,
): Promise<KafkaPipelineSetup> {
  let gw: TestGateway | undefined;
  let admin: Admin | undefined;
  let producer: Producer<string, string, string, string> | undefined;
  const close = async () => {
    await producer?.close();
    await admin?.close();
    if (gw) await closeScanned(gw);
  };
  try {
    gw = await startWorkerGateway(kind);
    const t = await setupTeam(gw, team);
    admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
    producer = newProducer(brokers);
    await admin.createTopics({ topics: [sourceTopic], partitions: 2, replicas: 1 });
    return { gw, t, admin, producer, source: sourceTopic, brokers, close };
  } catch (e) {
    await close();
    throw e;
  }
}

/**
 * Registers, in the calling describe block, a Kafka pipeline set-up started
 * in `beforeAll` and closed in `afterAll`; its parts are read through the
 * returned object once the block's tests run.
 */
export function kafkaPipelineFixture(
  kind: DbKind,
  team: string,
  brokers: string[],
  sourceTopic: string,
): KafkaPipelineSetup {
  let setup: KafkaPipelineSetup | undefined;
  beforeAll(async () => {
    setup = await startKafkaPipelineSetup(kind, team, brokers, sourceTopic);
  });
  afterAll(async () => {
    await setup?.close();
  });
  const started = () => {
    if (!setup) throw new Error('the Kafka pipeline set-up has not started');
    return setup;
  };
  return {
    get gw() {
      return started().gw;
    },
    get t() {
      return started().t;
    },
    get admin() {
      return started().admin;
    },
    get producer() {
      return started().producer;
    },
    source: sourceTopic,
    brokers,
    close: async () => setup?.close(),
  };
}

/**
 * A Kafka → Kafka pipeline `name` from the setup's source topic to topic
 * `out` with `mapper`, started and live; its id and its target connector's.
 */
export async function startLiveKafkaPipeline(
  s: KafkaPipelineSetup,
  name: string,
  out: string,
  mapper: Record<string, unknown>[],
): Promise<{ id: string; targetId: string }> {
  const created = await s.gw.http
    .post('/api/pipelines/')
    .set(s.t.owner.auth)
    .send({
      name,
      team_id: s.t.teamId,
      source_name: `${name}-src`,
      source_type: 'KAFKA_SOURCE',
      source_config: { topic: s.source, bootstrap_servers: s.brokers.join(',') },
      target_name: `${name}-dst`,
      target_type: 'KAFKA_TARGET',
      target_config: { bootstrap_server: s.brokers.join(',') },
      subscription_target_table_name: out,
      subscription_backfill: true,
      subscription_mapper_config: mapper,
    });
  if (created.status !== 201) throw new Error(`pipeline: ${created.status} ${JSON.stringify(created.body)}`);
  const id = created.body.id as string;
  await s.gw.http.post(`/api/pipelines/${id}/start`).set(s.t.owner.auth);
  await reachState(s.gw, s.t.owner, `/api/pipelines/${id}`, 'live');
  return { id, targetId: created.body.target_connector_id as string };
}
