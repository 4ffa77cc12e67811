import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Admin } from '@platformatic/kafka';
import { testKafkaBrokers, testKafkaSecurity } from '../../shared/test/kafka.js';
import { createScratchDatabase, testPostgresUrl } from '../../shared/test/postgres.js';
import { configs, createConnector } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway, type TestUser } from './harness.js';

// Schemathesis (property-based fuzzing from the OpenAPI document, every
// check) over the served /api/openapi.json of a gateway seeded with one
// object of each kind, so that operations on a real id are exercised and not
// only their 404. Any finding fails the suite. The CLI comes from PyPI, pinned
// and cached by scripts/schemathesis/ensure.sh.
//
// Every finding fails the suite. The few rejections of schema-valid requests
// that depend on the server's state or on rules no OpenAPI document can state
// (such as an id in the body that names nothing, a reset token or a current
// password the fuzzer cannot know, an e-mail address already taken), are listed in
// REJECTIONS below, each with its reason: a failure is dropped only when its
// operation, its status and every detail of the answer match one entry
// (gateway/test/schemathesis-hooks.py), so any other rejection on the same
// operation still fails. The hooks also give each schema-valid request that
// carries an Idempotency-Key a fresh key: reusing a key with another body is
// rightly a 422 (the IETF Idempotency-Key draft), and not what is tested here.
//
// One database is enough here (the server's when the suite has one): what
// Schemathesis finds is in the HTTP layer, which both databases share; the
// behaviour of each fix on both databases is tested in its own suite.

const ROOT = resolve(import.meta.dirname, '../..');

/**
 * The pre-flight operations of connector types that have no engine in this
 * version: they answer 501, which the server-error check counts as a failure.
 * Only these, and only that check, are left out; the list must equal the
 * routes that answer 501 (asserted below), so it shrinks as engines arrive.
 */
const NOT_IMPLEMENTED = [
  'post_connector_types_bigquery_target_check_credentials',
  'post_connector_types_elasticsearch_target_check_credentials',
  'post_connector_types_ibmi_source_check_credentials',
  'post_connector_types_ibmi_source_fetch_schema',
  'post_connector_types_ibmi_source_list_tables',
  'post_connector_types_mongo_source_check_credentials',
  'post_connector_types_mongo_source_fetch_schema',
  'post_connector_types_mongo_source_list_collections',
  'post_connector_types_mssql_log_source_check_credentials',
  'post_connector_types_mssql_log_source_fetch_schema',
  'post_connector_types_mssql_log_source_list_tables',
  'post_connector_types_mssql_source_check_credentials',
  'post_connector_types_mssql_source_fetch_schema',
  'post_connector_types_mssql_source_list_tables',
  'post_connector_types_mssql_target_check_credentials',
  'post_connector_types_oracle_source_check_credentials',
  'post_connector_types_oracle_source_fetch_schema',
  'post_connector_types_oracle_source_list_tables',
  'post_connector_types_snowflake_target_check_credentials',
  'post_connector_types_snowflake_target_warehouses',
];

/** Per operation, at most this many generated cases (the coverage phase adds its boundary cases). */
const MAX_EXAMPLES = 5;

/**
 * Rejections of schema-valid requests that depend on the server's state, not
 * on the request's shape, so the document cannot state them: per entry, the
 * operations, the status and a pattern every detail (each 422 issue's `msg`,
 * or a 400's code) must match. Everything the document can state is stated
 * there instead (password lengths, fields required together, the pre-flight
 * body forms), so this list only names what a schema cannot know.
 */
interface Rejection {
  /** Operation labels (`METHOD /path`); one ending in `*` names those that start with the rest. */
  operations: string[];
  status: number;
  /** A pattern that every detail of the answer matches. */
  detail: string;
  /** Only for a request with an empty body and no `connector_id` in its query. */
  emptyBodyWithoutConnectorId?: boolean;
  /** Only when every issue's `loc` starts with one of these. */
  locPrefixes?: string[][];
  reason: string;
}
const REJECTIONS: Rejection[] = [
  {
    reason:
      'An id in the body that names no object the caller can use: 422 at that field (spec 7: a validation ' +
      'error of the body; 404 is kept for the resource the path names). The seeded ids reach the paths; ' +
      'a random UUID in a body names nothing.',
    operations: [
      'POST /api-keys',
      'POST /backfills/',
      'POST /backfills/preview',
      'POST /k8s-secrets',
      'POST /subscriptions/',
      'POST /subscriptions/subscribe-all',
      'POST /teams/{id}/members/bulk',
      'POST /users/import-all',
      'POST /pipelines/',
      'POST /connectors/',
      'POST /warehouses/',
      'PATCH /datamodels/{id}/error-table',
      'PATCH /users/me',
      'PATCH /users/{id}',
      'PATCH /subscriptions/{id}',
      'PATCH /pipelines/{id}',
      'PATCH /connectors/{id}',
    ],
    status: 422,
    detail:
      '^(No such |Unknown |Not a (source|target) connector|The user is not a member|The connector belongs to another team|' +
      'The data model belongs to none|The connectors and data models belong to more than one team)',
  },
  {
    reason:
      'A single-use token the server mailed, or the current password: secrets the fuzzer cannot know ' +
      '(spec 7 names these 400s).',
    operations: ['POST /auth/reset-password', 'POST /auth/verify', 'POST /users/me/change-password'],
    status: 400,
    detail:
      '^(RESET_PASSWORD_BAD_TOKEN|VERIFY_USER_BAD_TOKEN|VERIFY_USER_ALREADY_VERIFIED|CHANGE_PASSWORD_BAD_PASSWORD)$',
  },
  {
    reason:
      'The password rules the document cannot state (it states the length in characters): at most 72 bytes ' +
      "of UTF-8 (what bcrypt reads), and not containing the account's e-mail address (spec 7 names these 400s).",
    operations: [
      'POST /auth/register',
      'POST /auth/reset-password',
      'PATCH /users/me',
      'PATCH /users/{id}',
      'POST /users/me/change-password',
    ],
    status: 400,
    detail:
      '^(REGISTER|RESET_PASSWORD|UPDATE_USER)_INVALID_PASSWORD: Password should (be at most 72 bytes|not contain e-mail)$',
  },
  {
    reason:
      "A pre-flight with an empty body checks the stored configuration of the query's connector_id; without " +
      'one it lacks the required fields. Which body is complete depends on a query parameter, which the ' +
      "JSON Schema of a body cannot see (the document says it in the empty form's description).",
    operations: ['POST /connector-types/*'],
    status: 422,
    detail: '^Field required',
    emptyBodyWithoutConnectorId: true,
  },
  {
    reason:
      "import-all replaces every account: the document must keep the caller's own account as an active " +
      "superuser, or the caller would lock themselves out; which account is the caller's is not in the body. " +
      'And its ids refer to one another across its arrays (a team to an environment of the document), which ' +
      'JSON Schema cannot relate.',
    operations: ['POST /users/import-all'],
    status: 422,
    detail:
      '^(The document must keep your own account as an active superuser|Unknown (user|team|environment)|' +
      'A team must belong to an environment of the document)$',
  },
  {
    reason:
      'The `schema` string must hold a valid Avro or JSON Schema definition: a rule on the content of a ' +
      'string that JSON Schema cannot state (`contentMediaType` says JSON, not a valid schema).',
    operations: ['POST /schemas/{subject}'],
    status: 422,
    detail: '^(Invalid Avro schema|Invalid JSON Schema|The schema is not valid JSON)',
  },
  {
    reason:
      'A secret reference (`valueFrom.secretKeyRef`) names a Kubernetes Secret that must exist, be granted ' +
      "to the caller's team or environment and have the key: state, not shape.",
    operations: [
      'POST /connector-types/*',
      'POST /connectors/',
      'PATCH /connectors/{id}',
      'POST /pipelines/',
      'PATCH /pipelines/{id}',
      'POST /subscriptions/',
      'PATCH /subscriptions/{id}',
      'POST /warehouses/',
      'PATCH /warehouses/{id}',
    ],
    status: 422,
    detail: '^(Secret ".*" is not granted|Secret ".*" has no key)',
  },
  {
    reason:
      'A pre-flight data action on a system that cannot be reached or refuses the credentials answers the ' +
      'documented 400 with the reason: a property of the world the request points at, not of the request.',
    operations: ['POST /connector-types/*'],
    status: 400,
    detail: '',
  },
  {
    reason:
      'PATCH with use_retention true keeps the stored broker settings when it sends none: whether there are ' +
      "some is the environment's state (POST states the rule in the document).",
    operations: ['PATCH /envs/{id}'],
    status: 422,
    detail: '^use_retention needs the broker settings',
  },
  {
    reason:
      'A field that names what the object already is must equal it: the stored connector_type, the ' +
      "pipeline's team (clients send the read shape back), a topic of the source's capture list.",
    operations: ['PATCH /connectors/{id}', 'PATCH /pipelines/{id}', 'POST /pipelines/{id}/configuration'],
    status: 422,
    detail:
      '^(connector_type cannot change after creation|A pipeline cannot move to another team|' +
      'Not in the capture list of the source)',
  },
  {
    reason:
      "Mapper rules beyond their schema (the document states the rules' shape): path syntax, strftime " +
      "directives and unique keys are rules on strings' content and across array items; a table target " +
      "needs a primary_key rule, which depends on the target's type (state).",
    operations: [
      'POST /subscriptions/',
      'PATCH /subscriptions/{id}',
      'POST /subscriptions/subscribe-all',
      'POST /pipelines/',
      'PATCH /pipelines/{id}',
      'POST /pipelines/{id}/configuration',
    ],
    status: 422,
    detail:
      '^(Invalid path |Invalid cast_format|Duplicate key |' +
      '.* writes tables: the mapping needs at least one rule with primary_key true|' +
      'A target that writes database tables needs at least one rule with primary_key true)',
  },
  {
    reason:
      "A connector's json_configuration (a pipeline's source_config, target_config) follows the schema of its connector_type (GET /connector-types/ " +
      'lists them). Stated in the document as one if/then per type (some 25), Schemathesis cannot generate ' +
      'from it ("Schema Error"), so the document names the rule in its description and leaves the value ' +
      'free-form; a PATCH without connector_type is checked against the stored type (state).',
    operations: ['POST /connectors/', 'PATCH /connectors/{id}', 'POST /pipelines/', 'PATCH /pipelines/{id}'],
    status: 422,
    detail: '',
    locPrefixes: [
      ['body', 'json_configuration'],
      ['body', 'source_config'],
      ['body', 'target_config'],
    ],
  },
  {
    reason:
      "Without env_id, the caller's active environment is the one meant: whether the caller has one is " +
      'state (a run may clear it through PATCH /users/me).',
    operations: ['GET /teams/', 'GET /teams/filter-one'],
    status: 422,
    detail: '^No environment selected',
  },
  {
    reason: "The e-mail address is already another account's (spec 7 names these 400s).",
    operations: ['POST /auth/register', 'PATCH /users/me', 'PATCH /users/{id}'],
    status: 400,
    detail: '^(REGISTER_USER_ALREADY_EXISTS|UPDATE_USER_EMAIL_ALREADY_EXISTS)$',
  },
];

const kind = databaseKinds().includes('postgres') ? 'postgres' : 'pglite';

async function ensureSchemathesis(): Promise<string> {
  const { stdout } = await promisify(execFile)(join(ROOT, 'scripts/schemathesis/ensure.sh'), {
    maxBuffer: 1 << 20,
  });
  return stdout.trim();
}

interface Seeded {
  /** Ids by the dictionary name the configuration binds to path parameters. */
  ids: Record<string, string[]>;
  /** Users whose tokens the operations that end or change the caller's own session use, one each. */
  sacrificial: Record<'logout' | 'me' | 'password', TestUser>;
}

/**
 * The systems the seeded connectors point at: the test broker (with SASL when
 * it has it) and a scratch PostgreSQL database, when the suite has them, so
 * that operations that reach them (previews) answer from a real system rather
 * than 502 for a host that does not resolve. Without them (a bare run) the
 * fixtures' unresolvable hosts are used.
 */
interface Systems {
  source: Record<string, unknown>;
  target: Record<string, unknown>;
  close(): Promise<void>;
}

async function systems(topic: string): Promise<Systems> {
  const brokers = testKafkaBrokers();
  if (!brokers || !testPostgresUrl()) {
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

async function seed(gw: TestGateway, admin: TestUser, reached: Systems): Promise<Seeded> {
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
  const schema = await post('/schemas/fuzz-subject', { schema: '"string"' });
  const secret = await post('/k8s-secrets', { name: 'fuzz-secret', data: { password: 'fuzz-value' } });
  const key = await post('/api-keys', { name: 'fuzz-key', env_ids: [env.id] });
  const sat = await post('/users/me/service-account-token', { name: 'fuzz-token' });
  const sacrificial = { logout: await gw.user(), me: await gw.user(), password: await gw.user() };
  void schema;
  return {
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

const toml = (v: unknown) => JSON.stringify(v);

/** The operationId the OpenAPI document gives a route (http/openapi.ts). */
const operationId = (r: { method: string; path: string }) =>
  `${r.method}_${r.path.replace(/[^A-Za-z0-9]+/g, '_').replace(/^_|_$/g, '')}`;

/** schemathesis.toml: dictionaries of real ids bound to the path parameters of each resource. */
function configuration(s: Seeded): string {
  // Every check, set here rather than on the command line, where it would
  // override the one exception of the pre-flight operations below.
  const lines: string[] = ['[checks]', 'enabled = true', ''];
  for (const [name, values] of Object.entries(s.ids)) {
    lines.push(`[dictionaries.${name}]`, `values = ${toml(values)}`, '');
  }
  const bind = (pathRegex: string, param: string, dictionary: string) =>
    lines.push(
      '[[operations]]',
      `include-path-regex = ${toml(pathRegex)}`,
      `parameters = { ${toml(`path.${param}`)} = { dictionary = ${toml(dictionary)}, probability = 0.8 } }`,
      '',
    );
  bind('^(/api)?/envs/\\{id\\}', 'id', 'env');
  bind('^(/api)?/teams/\\{id\\}', 'id', 'team');
  bind('^(/api)?/teams/\\{id\\}/members/\\{user_id\\}', 'user_id', 'member');
  bind('^(/api)?/users/\\{id\\}', 'id', 'member');
  bind('^(/api)?/connectors/\\{id\\}', 'id', 'connector');
  bind('^(/api)?/datamodels/\\{id\\}', 'id', 'datamodel');
  bind('^(/api)?/subscriptions/\\{id\\}', 'id', 'subscription');
  bind('^(/api)?/pipelines/\\{id\\}', 'id', 'pipeline');
  bind('^(/api)?/k8s-secrets/\\{name\\}', 'name', 'secret');
  bind('^(/api)?/api-keys/\\{id\\}', 'id', 'apiKey');
  bind('^(/api)?/users/me/service-account-tokens/\\{id\\}', 'id', 'serviceToken');
  bind('^(/api)?/schemas/\\{subject\\}', 'subject', 'subject');
  // Operations that end or change the caller's own session or account run as
  // a user of their own, so that the rest of the run keeps its token.
  for (const [path, user] of [
    ['auth/jwt/logout', s.sacrificial.logout],
    ['users/me', s.sacrificial.me],
    ['users/me/change-password', s.sacrificial.password],
  ] as const) {
    lines.push(
      '[[operations]]',
      `include-path-regex = ${toml(`^(/api)?/${path}$`)}`,
      `headers = { Authorization = ${toml(`Bearer ${user.token}`)} }`,
      '',
    );
  }
  lines.push(
    '[[operations]]',
    `include-operation-id = ${toml(NOT_IMPLEMENTED)}`,
    'checks = { not_a_server_error = { enabled = false } }',
    '',
  );
  return lines.join('\n');
}

function run(
  cmd: string,
  args: string[],
  cwd: string,
  env: Record<string, string>,
): Promise<{ code: number; output: string }> {
  return new Promise((done) => {
    const child = spawn(cmd, args, {
      cwd,
      env: { ...process.env, ...env, NO_COLOR: '1', COLUMNS: '160' },
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => done({ code: code ?? -1, output }));
  });
}

describe(`Schemathesis, every check, over the served OpenAPI document (${kind})`, () => {
  let gw: TestGateway;
  let server: Server;
  /** Status of every request whose path named a seeded id, by that id. */
  const onSeeded = new Map<string, number[]>();
  let st: string;
  let dir: string;
  let seeded: Seeded;
  let admin: TestUser;
  let reached: Systems | undefined;
  const streamBrokersBefore = process.env.SLUICE_STREAM_BROKERS;

  beforeAll(async () => {
    st = await ensureSchemathesis();
    reached = await systems(`fuzz-orders-${randomUUID().slice(0, 8)}`);
    // Previews of the seeded pipeline read the platform stream on the test broker, over loopback.
    process.env.SLUICE_STREAM_BROKERS = testKafkaBrokers()?.join(',') ?? streamBrokersBefore ?? '';
    gw = await startTestGateway(kind, { SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128' });
    server = createServer((req, res) => {
      res.on('finish', () => {
        for (const ids of Object.values(seeded?.ids ?? {}))
          for (const id of ids)
            if (req.url?.includes(`/${id}`)) onSeeded.set(id, [...(onSeeded.get(id) ?? []), res.statusCode]);
      });
      gw.app(req, res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    admin = await gw.superuser();
    seeded = await seed(gw, admin, reached);
    dir = mkdtempSync(join(tmpdir(), 'sluice-schemathesis-'));
  }, 300_000);

  afterAll(async () => {
    await new Promise<void>((r) => server?.close(() => r()));
    await gw?.close();
    await reached?.close();
    if (streamBrokersBefore === undefined) delete process.env.SLUICE_STREAM_BROKERS;
    else process.env.SLUICE_STREAM_BROKERS = streamBrokersBefore;
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('lists exactly the operations that answer 501 as its exceptions', async () => {
    const answering501: string[] = [];
    for (const r of gw.routes.filter((x) => x.responses[501])) {
      const res = await gw.http[r.method](`/api${r.path}`).set(admin.auth).send({});
      if (res.status === 501) answering501.push(operationId(r));
    }
    expect([...NOT_IMPLEMENTED].sort()).toEqual(answering501.sort());
  });

  it('lists in REJECTIONS only operations the document has', () => {
    const labels = new Set(
      gw.routes.map((r) => `${r.method.toUpperCase()} ${r.path.replace(/:([A-Za-z_]+)/g, '{$1}')}`),
    );
    const known = (op: string) =>
      op.endsWith('*') ? [...labels].some((l) => l.startsWith(op.slice(0, -1))) : labels.has(op);
    for (const entry of REJECTIONS)
      for (const op of entry.operations) expect([op, known(op)]).toEqual([op, true]);
  });

  it('reports nothing', async () => {
    const port = (server.address() as AddressInfo).port;
    const config = join(dir, 'schemathesis.toml');
    writeFileSync(config, configuration(seeded));
    const exceptions = join(dir, 'rejections.json');
    const dropped = join(dir, 'dropped.jsonl');
    writeFileSync(exceptions, JSON.stringify(REJECTIONS));
    writeFileSync(dropped, '');
    const started = Date.now();
    const { code, output } = await run(
      st,
      [
        '--config-file',
        config,
        'run',
        `http://127.0.0.1:${port}/api/openapi.json`,
        '--max-examples',
        String(MAX_EXAMPLES),
        // One worker: the run is reproducible for a seed, and Hypothesis's
        // source inspection is not thread-safe (spurious runtime errors).
        '--workers',
        '1',
        '--seed',
        process.env.SLUICE_SCHEMATHESIS_SEED ?? '1',
        '--no-shrink',
        '--request-timeout',
        '30',
        '-H',
        `Authorization: Bearer ${admin.token}`,
      ],
      dir,
      {
        SCHEMATHESIS_HOOKS: join(ROOT, 'gateway/test/schemathesis-hooks.py'),
        SLUICE_SCHEMATHESIS_EXCEPTIONS: exceptions,
        SLUICE_SCHEMATHESIS_DROPPED: dropped,
      },
    );
    const seconds = Math.round((Date.now() - started) / 1000);
    // The whole report, for a finding that the tail below does not show.
    if (process.env.SLUICE_SCHEMATHESIS_LOG) writeFileSync(process.env.SLUICE_SCHEMATHESIS_LOG, output);
    if (code !== 0)
      throw new Error(`Schemathesis exited ${code} after ${seconds} s:\n${output.slice(-20000)}`);
    const drops = readFileSync(dropped, 'utf8').split('\n').filter(Boolean);
    const byOperation = new Map<string, number>();
    const used = new Set<number>();
    for (const line of drops) {
      const d = JSON.parse(line) as { operation: string; status: number; entry: number };
      used.add(d.entry);
      const key = `${d.operation} ${d.status}`;
      byOperation.set(key, (byOperation.get(key) ?? 0) + 1);
    }
    console.log(
      `Schemathesis: clean in ${seconds} s; state-dependent rejections (REJECTIONS): ` +
        `${JSON.stringify(Object.fromEntries(byOperation))}; entries not needed by this run: ` +
        `${JSON.stringify(REJECTIONS.filter((_, i) => !used.has(i)).map((r) => r.reason.slice(0, 60)))}\n` +
        output.slice(-1500),
    );
    // The seeded ids reached the operations on them, and some were answered as found.
    const answered = [...onSeeded.values()].flat();
    console.log(
      `Seeded ids: ${onSeeded.size} reached, ${answered.length} requests, ` +
        `${answered.filter((status) => status < 300).length} answered 2xx`,
    );
    expect(onSeeded.size).toBeGreaterThan(5);
    expect(answered.filter((status) => status < 300).length).toBeGreaterThan(20);
  }, 900_000);
});
