import { Admin, type Producer } from '@platformatic/kafka';
import { assertWorkerBuilt, newProducer, WORKER_PROGRAM } from '@sluice/testing/kafka-helpers';
import { closeScanned, reachState, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { startTestGateway, type DbKind, type TestGateway } from './harness.js';

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
  assertWorkerBuilt();
  let gw: TestGateway | undefined;
  let admin: Admin | undefined;
  let producer: Producer<string, string, string, string> | undefined;
  const close = async () => {
    await producer?.close();
    await admin?.close();
    if (gw) await closeScanned(gw);
  };
  try {
    gw = await startTestGateway(kind, {
      SLUICE_EMBEDDED_OPERATOR: 'true',
      SLUICE_WORKER_COMMAND: JSON.stringify([process.execPath, WORKER_PROGRAM]),
    });
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
