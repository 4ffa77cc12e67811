import { Admin, type Producer } from '@platformatic/kafka';
import { assertWorkerBuilt, newProducer, WORKER_PROGRAM } from '@sluice/testing/kafka-helpers';
import { closeScanned, setupTeam, type TeamSetup } from './catalog-fixtures.js';
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
    return { gw, t, admin, producer, close };
  } catch (e) {
    await close();
    throw e;
  }
}
