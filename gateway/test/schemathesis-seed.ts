import { Admin } from '@platformatic/kafka';
import { testKafkaBrokers, testKafkaSecurity } from '@sluice/testing/kafka';
import { createScratchDatabase, testPostgresUrl } from '@sluice/testing/postgres';
import { configs, createConnector } from './catalog-fixtures.js';
import type { TestGateway, TestUser } from './harness.js';

// The objects the Schemathesis run (schemathesis.test.ts) and the witnesses
// of its REJECTIONS (schemathesis-rejections.test.ts) work on: an environment,
// a team with a member, one object of each kind.

export interface Seeded {
  /** Ids by the dictionary name the configuration binds to path parameters. */
  ids: Record<string, string[]>;
  /** The member of the seeded team (its first `member` id). */
  member: TestUser;
  /** Users whose tokens the operations that end or change the caller's own session use, one each. */
  sacrificial: Record<'logout' | 'me' | 'password', TestUser>;
}

/**
 * The systems the seeded connectors point at: the test broker (with SASL when
 * it has it) and a scratch PostgreSQL database, when the suite has them and
 * `reach` asks for them, so that operations that reach them (previews) answer
 * from a real system rather than 502 for a host that does not resolve.
 * Otherwise the fixtures' unresolvable hosts are used.
 */
export interface Systems {
  source: Record<string, unknown>;
  target: Record<string, unknown>;
  close(): Promise<void>;
}

export async function systems(topic: string, reach = true): Promise<Systems> {
  const brokers = testKafkaBrokers();
  if (!reach || !brokers || !testPostgresUrl()) {
    return { source: configs.kafkaSource(topic), target: configs.pgTarget(), close: async () => undefined };
  }
  const security = testKafkaSecurity();
  const admin = new Admin({ clientId: 'sluice-schemathesis', bootstrapBrokers: brokers });
  await admin.createTopics({ topics: [topic], partitions: 1, replicas: 1 });
  await admin.close();
  const db = await createScratchDatabase('fuzz_tgt');
  return {
    source: security
      ? {
          topic,
          bootstrap_servers: security.saslPlaintextBrokers.join(','),
          security_protocol: 'SASL_PLAINTEXT',
          sasl_mechanism: 'SCRAM-SHA-512',
          sasl_username: security.username,
          sasl_password: security.password,
        }
      : { topic, bootstrap_servers: brokers.join(',') },
    // The test server trusts local connections; the connector schema wants a password anyway.
    target: { ...db.settings, password: db.settings.password || 'unused-fuzz' },
    close: () => db.drop(),
  };
}

export async function seed(gw: TestGateway, admin: TestUser, reached: Systems): Promise<Seeded> {
  const expectStatus = (res: { status: number; body: unknown }, status: number, what: string) => {
    if (res.status !== status) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as Record<string, unknown>;
  };
  const post = async (path: string, body: unknown, status = 201) =>
    expectStatus(
      await gw.http
        .post(`/api${path}`)
        .set(admin.auth)
        .send(body as object),
      status,
      `POST ${path}`,
    );
  const env = await post('/envs/', { name: 'fuzz-env' });
  const team = await post('/teams/', { name: 'fuzz-team' });
  const member = await gw.user();
  expectStatus(
    await gw.http
      .post(`/api/teams/${String(team.id)}/members/bulk`)
      .set(admin.auth)
      .send({ members: [member.id] }),
    204,
    'add member',
  );
  const source = await createConnector(
    gw,
    admin,
    String(team.id),
    'fuzz-source',
    'KAFKA_SOURCE',
    reached.source,
  );
  const target = await createConnector(
    gw,
    admin,
    String(team.id),
    'fuzz-target',
    'POSTGRES_TARGET',
    reached.target,
  );
  const subscription = await post('/subscriptions/', {
    datamodel_id: source.datamodel_ids[0],
    target_connector_id: target.id,
  });
  const pipeline = await post('/pipelines/', {
    name: 'fuzz-pipeline',
    team_id: team.id,
    existing_source_id: source.id,
    existing_target_id: target.id,
  });
  await post('/schemas/fuzz-subject', { schema: '"string"' });
  const secret = await post('/k8s-secrets', { name: 'fuzz-secret', data: { password: 'fuzz-value' } });
  const key = await post('/api-keys', { name: 'fuzz-key', env_ids: [env.id] });
  const sat = await post('/users/me/service-account-token', { name: 'fuzz-token' });
  const sacrificial = { logout: await gw.user(), me: await gw.user(), password: await gw.user() };
  return {
    member,
    sacrificial,
    ids: {
      env: [String(env.id)],
      team: [String(team.id)],
      member: [String(member.id), (await gw.user()).id],
      connector: [source.id, target.id],
      datamodel: source.datamodel_ids,
      subscription: [String(subscription.id)],
      pipeline: [String(pipeline.id)],
      secret: [String(secret.name)],
      apiKey: [String(key.id)],
      serviceToken: [String(sat.id)],
      subject: ['fuzz-subject'],
    },
  };
}
