import type { TestGateway, TestUser } from './harness.js';

/** Inline secret values the catalog tests write; no response or log may ever contain them. */
export const SECRETS = {
  pgSource: 'pg-source-s3cret-9f2c',
  pgTarget: 'pg-target-s3cret-4b7e',
  kafka: 'kafka-sasl-s3cret-1d8a',
  mapperKey: 'mapper-passphrase-s3cret-77aa',
  warehouseToken: 'dapi-warehouse-s3cret-5c3d',
  warehouseToken2: 'dapi-warehouse-s3cret-e81f',
} as const;

export const configs = {
  kafkaSource: (topic = 'orders') => ({ topic, bootstrap_servers: 'kafka-1:9092' }),
  pgSource: (whitelist = ['public.orders', 'public.customers']) => ({
    host: 'db.internal',
    database: 'shop',
    user: 'cdc',
    password: SECRETS.pgSource,
    whitelist,
  }),
  pgTarget: () => ({ host: 'dwh.internal', database: 'dwh', user: 'loader', password: SECRETS.pgTarget }),
  kafkaTarget: () => ({
    bootstrap_server: 'kafka-2:9092',
    security_protocol: 'SASL_SSL',
    sasl_mechanism: 'PLAIN',
    sasl_username: 'writer',
    sasl_password: SECRETS.kafka,
  }),
};

/**
 * The body of a Kafka → Kafka pipeline `name` of team `teamId`: its source
 * `<name>-src` reads `<name>-topic`, its target is `<name>-dst`.
 */
export const kafkaPipeline = (name: string, teamId: string) => ({
  name,
  team_id: teamId,
  source_name: `${name}-src`,
  source_type: 'KAFKA_SOURCE',
  source_config: configs.kafkaSource(`${name}-topic`),
  target_name: `${name}-dst`,
  target_type: 'KAFKA_TARGET',
  target_config: { bootstrap_server: 'kafka:9092' },
});

/** Creates the environment `name` as `u`; its id. */
export async function createEnv(gw: Pick<TestGateway, 'http'>, u: TestUser, name: string): Promise<string> {
  return (await gw.http.post('/api/envs/').set(u.auth).send({ name })).body.id as string;
}

export interface TeamSetup {
  owner: TestUser;
  /** A second member of the team (role member). */
  member: TestUser;
  /** In the same environment, not in the team. */
  outsider: TestUser;
  /** Member of another environment only. */
  stranger: TestUser;
  envId: string;
  teamId: string;
}

/** An environment with a team (owner + member), an outsider of the team, and a stranger elsewhere. */
export async function setupTeam(gw: TestGateway, name = 'catalog'): Promise<TeamSetup> {
  const [owner, member, outsider, stranger] = [
    await gw.user(),
    await gw.user(),
    await gw.user(),
    await gw.user(),
  ];
  const envId = (
    await gw.http
      .post('/api/envs/')
      .set(owner.auth)
      .send({ name: `${name}-env` })
  ).body.id as string;
  const teamId = (
    await gw.http
      .post('/api/teams/')
      .set(owner.auth)
      .send({ name: `${name}-team` })
  ).body.id as string;
  const add = await gw.http
    .post(`/api/teams/${teamId}/members/bulk`)
    .set(owner.auth)
    .send({ members: [member.id] });
  if (add.status !== 204) throw new Error(`adding a member failed: ${add.status}`);
  // The outsider is in the environment through a team of their own.
  const otherTeam = (
    await gw.http
      .post('/api/teams/')
      .set(owner.auth)
      .send({ name: `${name}-other` })
  ).body.id;
  await gw.http
    .post(`/api/teams/${otherTeam}/members/bulk`)
    .set(owner.auth)
    .send({ members: [outsider.id] });
  await gw.http
    .post('/api/envs/')
    .set(stranger.auth)
    .send({ name: `${name}-elsewhere` });
  return { owner, member, outsider, stranger, envId, teamId };
}

export async function createConnector(
  gw: TestGateway,
  u: TestUser,
  teamId: string,
  name: string,
  connector_type: string,
  json_configuration: Record<string, unknown>,
) {
  const res = await gw.http
    .post('/api/connectors/')
    .set(u.auth)
    .send({ name, connector_type, json_configuration, team_id: teamId });
  if (res.status !== 201)
    throw new Error(`connector create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; datamodel_ids: string[]; name: string };
}

/**
 * Spec 2.14 and the standards: no inline secret value of this suite may
 * appear in any response body or log line the gateway produced.
 */
export function expectNoSecretLeak(gw: TestGateway): void {
  const { bodies, logs } = gw.recorded();
  const hits: string[] = [];
  for (const secret of Object.values(SECRETS)) {
    for (const [what, lines] of [
      ['response', bodies],
      ['log line', logs],
    ] as const) {
      const line = lines.find((l) => l.includes(secret));
      if (line) hits.push(`${what} contains ${secret}: ${line.slice(0, 300)}`);
    }
  }
  if (hits.length > 0) throw new Error(hits.join('\n'));
  // The scan saw the suite's traffic (guards against a recorder that records nothing).
  if (bodies.length === 0 || logs.length === 0) throw new Error('nothing was recorded');
}

/** The afterAll of a catalog suite: scan for leaked secrets, then close the gateway whatever the scan says. */
export async function closeScanned(gw: TestGateway): Promise<void> {
  try {
    expectNoSecretLeak(gw);
  } finally {
    await gw.close();
  }
}

/**
 * Polls `path` (a pipeline says `state`, a connector `status`) until it reads
 * `state`; fails with the body as soon as it reads `error` instead, or at
 * `timeoutMs`. Returns the body.
 */
export async function reachState(
  gw: TestGateway,
  u: TestUser,
  path: string,
  state: string,
  timeoutMs = 90_000,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await gw.http.get(path).set(u.auth);
    const body = res.body as Record<string, unknown>;
    const now = body.state ?? body.status;
    if (res.status === 200 && now === state) return body;
    if (res.status === 200 && now === 'error')
      throw new Error(`${path} is in error: ${JSON.stringify(body)}`);
    if (Date.now() > deadline)
      throw new Error(
        `${path} did not reach ${state} in ${timeoutMs} ms: ${res.status} ${JSON.stringify(body)}`,
      );
    await new Promise((r) => setTimeout(r, 250));
  }
}
