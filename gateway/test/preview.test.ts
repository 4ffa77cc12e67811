import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { Admin, type Producer } from '@platformatic/kafka';
import { decryptValue } from '@sluice/shared/mapper';
import { describeWithKafka, testKafkaBrokers, testKafkaSecurity } from '@sluice/testing/kafka';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { freePort, newProducer } from '@sluice/testing/kafka-helpers';
import { closeScanned, SECRETS, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { startTestGateway, type TestGateway } from './harness.js';

// Preview before going live against the real systems: a Kafka
// source topic on the test broker (reached with SASL when the broker has it:
// the password goes through the secret store), PostgreSQL targets and a
// PostgreSQL source on the test server, the platform stream broker for the
// database source. Every preview must leave everything as it was: no table,
// no column, no consumer group.

const run = randomUUID().slice(0, 8);
const withBoth = testPostgresUrl() ? describeWithKafka : describe.skip;

withBoth('preview of a subscription or pipeline (real broker, real PostgreSQL)', () => {
  const brokers = testKafkaBrokers() ?? [];
  const security = testKafkaSecurity();
  const topic = `preview-orders-${run}`;
  const table = `orders_${run}`;
  const errorTable = `orders_errors_${run}`;
  let gw: TestGateway;
  let t: TeamSetup;
  let admin: Admin;
  let producer: Producer<string, string, string, string>;
  let target: ScratchDatabase;
  let source: ScratchDatabase;
  let kafkaPipeline: { id: string; subscription_id: string; datamodel_id: string };
  const streamBrokersBefore = process.env.SLUICE_STREAM_BROKERS;

  const pgConfig = (db: ScratchDatabase) => ({
    ...db.settings,
    // The test server trusts local connections; the connector schema wants a password anyway.
    password: db.settings.password || `unused-${run}`,
  });
  const kafkaConfig = () =>
    security
      ? {
          topic,
          bootstrap_servers: security.saslPlaintextBrokers.join(','),
          security_protocol: 'SASL_PLAINTEXT',
          sasl_mechanism: 'SCRAM-SHA-512',
          sasl_username: security.username,
          sasl_password: security.password,
        }
      : { topic, bootstrap_servers: brokers.join(',') };
  const mapper = [
    { key: 'order_id', path: 'order|id', cast: 'int', primary_key: true },
    { key: 'total', path: 'order|total', cast: 'float' },
    { key: 'status', path: 'order|status', cast: 'string' },
  ];

  /** A pipeline `preview-<name>-<run>` with new connectors on both sides. */
  async function createPipeline(
    name: string,
    [sourceType, sourceConfig]: [string, unknown],
    [targetType, targetConfig]: [string, unknown],
    fields: Record<string, unknown>,
  ) {
    const res = await gw.http
      .post('/api/pipelines/')
      .set(t.owner.auth)
      .send({
        team_id: t.teamId,
        name: `preview-${name}-${run}`,
        source_name: `preview-${name}-src-${run}`,
        source_type: sourceType,
        source_config: sourceConfig,
        target_name: `preview-${name}-dst-${run}`,
        target_type: targetType,
        target_config: targetConfig,
        ...fields,
      });
    if (res.status !== 201)
      throw new Error(`pipeline create failed: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as { id: string; subscription_id: string; datamodel_id: string };
  }
  const preview = (path: string, body: unknown = {}, auth = t.owner.auth) =>
    gw.http
      .post(`/api/${path}/preview`)
      .set(auth)
      .send(body as object);
  const tableExists = async (name: string) =>
    (
      await target.client.query<{ ok: boolean }>('select to_regclass($1) is not null as ok', [
        `public.${name}`,
      ])
    ).rows[0]!.ok;

  beforeAll(async () => {
    process.env.SLUICE_STREAM_BROKERS = brokers.join(',');
    gw = await startTestGateway('pglite', { SLUICE_OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32,::1/128' });
    t = await setupTeam(gw, 'preview');
    target = await createScratchDatabase('preview_tgt');
    source = await createScratchDatabase('preview_src');
    await source.client.query(
      'create table public.orders (id bigint primary key, status text, total numeric(10,2))',
    );
    await source.client.query(
      "insert into public.orders values (1, 'new', 1.50), (2, 'paid', 20.00), (3, 'sent', 3.25)",
    );
    admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
    producer = newProducer(brokers);
    await admin.createTopics({ topics: [topic], partitions: 1, replicas: 1 });
    // Five messages: three good ones, one not JSON, one the mapper cannot cast.
    for (const value of [
      JSON.stringify({ order: { id: 1, total: '1.25', status: 'new' } }),
      JSON.stringify({ order: { id: 2, total: '2.50', status: 'paid' } }),
      'not json {',
      JSON.stringify({ order: { id: 'many', total: '3' } }),
      JSON.stringify({ order: { id: 5, total: '5', status: 'sent' } }),
    ]) {
      await producer.send({ messages: [{ topic, value }] });
    }
    kafkaPipeline = await createPipeline(
      'kafka',
      ['KAFKA_SOURCE', kafkaConfig()],
      ['POSTGRES_TARGET', pgConfig(target)],
      {
        subscription_target_table_name: table,
        subscription_mapper_config: mapper,
        subscription_error_table_enabled: true,
        subscription_error_table_name: errorTable,
      },
    );
  }, 60_000);

  afterAll(async () => {
    if (streamBrokersBefore === undefined) delete process.env.SLUICE_STREAM_BROKERS;
    else process.env.SLUICE_STREAM_BROKERS = streamBrokersBefore;
    await producer?.close();
    await admin?.close();
    await target?.drop();
    await source?.drop();
    if (gw) {
      // The SASL password went through the secret store: no body or log line may contain it.
      if (security) {
        const { bodies, logs } = gw.recorded();
        expect([...bodies, ...logs].filter((l) => l.includes(security.password))).toEqual([]);
      }
      await closeScanned(gw);
    }
  });

  it('documents both routes in the OpenAPI document, with their error answers', () => {
    const paths = gw.openapi.paths as Record<string, { post?: { responses: Record<string, unknown> } }>;
    for (const path of ['/subscriptions/{id}/preview', '/pipelines/{id}/preview']) {
      expect(Object.keys(paths[path]?.post?.responses ?? {}).sort()).toEqual([
        '200',
        '401',
        '403',
        '404',
        '409',
        '422',
        '502',
      ]);
    }
  });

  it('maps the newest messages of a Kafka topic as the worker would: rows, errors, and the CREATE TABLE', async () => {
    const res = await preview(`pipelines/${kafkaPipeline.id}`);
    expect(res.status).toBe(200);
    expect(res.body.subscription_id).toBe(kafkaPipeline.subscription_id);
    expect(res.body.source).toEqual({ kind: 'stream', topic, table: null, fetched: 5 });
    expect(res.body.rows).toEqual([
      {
        message_index: 0,
        table,
        op: 'upsert',
        row: { order_id: 1, total: 1.25, status: 'new' },
        key_columns: ['order_id'],
      },
      {
        message_index: 1,
        table,
        op: 'upsert',
        row: { order_id: 2, total: 2.5, status: 'paid' },
        key_columns: ['order_id'],
      },
      {
        message_index: 4,
        table,
        op: 'upsert',
        row: { order_id: 5, total: 5, status: 'sent' },
        key_columns: ['order_id'],
      },
    ]);
    expect(res.body.errors).toEqual([
      {
        message_index: 2,
        partition: 0,
        offset: '2',
        kind: 'not_json',
        reason: expect.stringMatching(/^not JSON/),
        row_index: 0,
        row: null,
        message: 'not json {',
        error_table: errorTable,
      },
      {
        message_index: 3,
        partition: 0,
        offset: '3',
        kind: 'mapper',
        reason: expect.stringMatching(/many/),
        row_index: 0,
        row: expect.objectContaining({ error: expect.any(String) }),
        message: JSON.stringify({ order: { id: 'many', total: '3' } }),
        error_table: errorTable,
      },
    ]);
    expect(res.body.ddl.schema).toBe('public');
    const [main, errors] = res.body.ddl.tables as Record<string, unknown>[];
    expect(main).toEqual({
      table,
      exists: false,
      statements: [
        `CREATE TABLE IF NOT EXISTS "public"."${table}" ("order_id" bigint, "total" double precision, "status" text, PRIMARY KEY ("order_id"))`,
      ],
      type_conflicts: [],
      problems: [],
    });
    // The error table the worker would create for the two failures.
    expect(errors).toMatchObject({ table: errorTable, exists: false, problems: [] });
    expect((errors!.statements as string[])[0]).toMatch(
      new RegExp(`^CREATE TABLE IF NOT EXISTS "public"."${errorTable}" \\("subscription_id" text`),
    );
    expect(res.body.ddl.statements).toHaveLength(2);

    // Nothing was written: no table, and no consumer group (neither the subscription's nor another).
    expect(await tableExists(table)).toBe(false);
    expect(await tableExists(errorTable)).toBe(false);
    const groups = [...(await admin.listGroups()).keys()];
    expect(groups).not.toContain(`sluice-${kafkaPipeline.subscription_id}`);
    expect(groups).not.toContain('sluice-preflight');
  });

  it('the subscription route answers the same; `limit` takes the newest messages', async () => {
    const res = await preview(`subscriptions/${kafkaPipeline.subscription_id}`, { limit: 2 });
    expect(res.status).toBe(200);
    expect(res.body.source.fetched).toBe(2);
    expect(res.body.rows.map((r: { row: { order_id: number } }) => r.row.order_id)).toEqual([5]);
    expect(res.body.errors.map((e: { kind: string; offset: string }) => [e.kind, e.offset])).toEqual([
      ['mapper', '3'],
    ]);
  });

  it('against an existing table: the ALTER for the missing column and the type conflict; the table is left as it was', async () => {
    await target.client.query(`create table public.${table} (order_id bigint primary key, total boolean)`);
    const res = await preview(`pipelines/${kafkaPipeline.id}`);
    expect(res.status).toBe(200);
    expect(res.body.ddl.tables[0]).toEqual({
      table,
      exists: true,
      statements: [`ALTER TABLE "public"."${table}" ADD COLUMN IF NOT EXISTS "status" text`],
      type_conflicts: [{ column: 'total', table_type: 'boolean', mapper_type: 'double precision' }],
      problems: [],
    });
    const columns = await target.client.query<{ column_name: string }>(
      'select column_name from information_schema.columns where table_name = $1 order by ordinal_position',
      [table],
    );
    expect(columns.rows.map((r) => r.column_name)).toEqual(['order_id', 'total']);
    // Without a unique key on order_id the worker refuses the table: the preview says so.
    await target.client.query(`alter table public.${table} drop constraint ${table}_pkey`);
    const unkeyed = await preview(`pipelines/${kafkaPipeline.id}`);
    expect(unkeyed.body.ddl.tables[0].problems).toEqual([
      expect.stringMatching(/has no primary key or unique index on \(order_id\)/),
    ]);
    await target.client.query(`drop table public.${table}`);
  });

  it('maps the messages of the body instead of fetching any', async () => {
    const res = await preview(`subscriptions/${kafkaPipeline.subscription_id}`, {
      messages: [{ order: { id: 9, total: '9.5', status: 'x' } }, { order: { id: 'nine' } }],
    });
    expect(res.status).toBe(200);
    expect(res.body.source).toEqual({ kind: 'request', topic, table: null, fetched: 2 });
    expect(res.body.rows.map((r: { row: unknown }) => r.row)).toEqual([
      { order_id: 9, total: 9.5, status: 'x' },
    ]);
    expect(res.body.errors).toEqual([
      expect.objectContaining({ message_index: 1, kind: 'mapper', partition: null, offset: null }),
    ]);
  });

  it('a PostgreSQL source never started: rows sampled from the source table as snapshot events', async () => {
    const p = await createPipeline(
      'pg',
      ['POSTGRES_SOURCE', { ...pgConfig(source), whitelist: ['public.orders'] }],
      ['POSTGRES_TARGET', pgConfig(target)],
      {
        subscription_target_table_name: `copy_${run}`,
        subscription_mapper_config: [
          { key: 'id', path: 'id', cast: 'int', primary_key: true },
          { key: 'status', path: 'status' },
          { key: 'total', path: 'total', cast: 'float' },
        ],
      },
    );
    const res = await preview(`pipelines/${p.id}`, { limit: 2 });
    expect(res.status).toBe(200);
    expect(res.body.source).toEqual({
      kind: 'table',
      topic: `sluice.${p.datamodel_id}`,
      table: 'public.orders',
      fetched: 2,
    });
    expect(res.body.rows.map((r: { row: unknown; op: string }) => [r.op, r.row])).toEqual([
      ['upsert', { id: 1, status: 'new', total: 1.5 }],
      ['upsert', { id: 2, status: 'paid', total: 20 }],
    ]);
    expect(res.body.warnings).toEqual(
      expect.arrayContaining([expect.stringMatching(/does not exist yet \(never started\)/)]),
    );
    expect(res.body.ddl.tables[0]).toMatchObject({ table: `copy_${run}`, exists: false });
    expect(res.body.ddl.statements[0]).toMatch(/^CREATE TABLE IF NOT EXISTS "public"."copy_/);
    expect(await tableExists(`copy_${run}`)).toBe(false);

    // Rows given in the body are wrapped as snapshot events too; a non-object is refused.
    const given = await preview(`subscriptions/${p.subscription_id}`, { messages: [{ id: 7, status: 'x' }] });
    expect(given.body.source.kind).toBe('request');
    expect(given.body.rows).toEqual([
      expect.objectContaining({ row: expect.objectContaining({ id: 7, status: 'x' }) }),
    ]);
    const bad = await preview(`subscriptions/${p.subscription_id}`, { messages: [{ id: 7 }, 'x'] });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toEqual([expect.objectContaining({ loc: ['body', 'messages', 1] })]);
  });

  it('a database source with a change stream: its change events are mapped, deletes included', async () => {
    const p = await createPipeline(
      'stream',
      ['POSTGRES_SOURCE', { ...pgConfig(source), whitelist: ['public.orders'] }],
      ['KAFKA_TARGET', { bootstrap_server: brokers.join(',') }],
      {
        subscription_target_table_name: `copy-${run}`,
        subscription_mapper_config: [
          { key: 'id', path: 'id', cast: 'int', primary_key: true },
          { key: 'status', path: 'status' },
        ],
      },
    );
    const stream = `sluice.${p.datamodel_id}`;
    await admin.createTopics({ topics: [stream], partitions: 1, replicas: 1 });
    const event = (op: string, before: unknown, after: unknown) =>
      JSON.stringify({
        op,
        before,
        after,
        key: { id: 4 },
        source: {
          connector_id: 'c',
          datamodel_id: p.datamodel_id,
          entry: 'public.orders',
          position: '0/1',
          snapshot: false,
          ts_ms: 1,
        },
        emitted_ms: 2,
      });
    await producer.send({
      messages: [
        { topic: stream, value: event('c', null, { id: 4, status: 'new' }) },
        { topic: stream, value: event('d', { id: 4, status: 'new' }, null) },
        { topic: stream, value: JSON.stringify({ id: 4 }) },
      ],
    });
    const res = await preview(`pipelines/${p.id}`);
    expect(res.status).toBe(200);
    expect(res.body.source).toEqual({ kind: 'stream', topic: stream, table: null, fetched: 3 });
    expect(res.body.rows.map((r: { op: string; row: unknown }) => [r.op, r.row])).toEqual([
      ['upsert', { id: 4, status: 'new' }],
      ['delete', { id: 4, status: 'new' }],
    ]);
    expect(res.body.errors).toEqual([
      expect.objectContaining({ message_index: 2, kind: 'not_change_event', error_table: null }),
    ]);
    // A broker target has no DDL.
    expect(res.body.ddl).toBeNull();
  });

  it('a draft without rules maps identically, and warns that a table target needs a primary key', async () => {
    const p = await createPipeline(
      'draft',
      ['KAFKA_SOURCE', kafkaConfig()],
      ['POSTGRES_TARGET', pgConfig(target)],
      {
        subscription_target_table_name: `draft_${run}`,
      },
    );
    const res = await preview(`pipelines/${p.id}`, { messages: [{ a: 1, b: 'x' }, 7] });
    expect(res.status).toBe(200);
    expect(res.body.rows.map((r: { row: unknown; key_columns: string[] }) => [r.row, r.key_columns])).toEqual(
      [
        [{ a: 1, b: 'x' }, ['a', 'b']],
        [{ value: 7 }, ['value']],
      ],
    );
    expect(res.body.warnings).toEqual([expect.stringMatching(/no primary_key rule/)]);
  });

  it('an encrypting rule uses the passphrase from the secret store, never shown', async () => {
    const p = await createPipeline(
      'crypt',
      ['KAFKA_SOURCE', kafkaConfig()],
      ['KAFKA_TARGET', { bootstrap_server: brokers.join(',') }],
      {
        subscription_target_table_name: `crypt-${run}`,
        subscription_mapper_config: [
          { key: 'id', path: 'id', primary_key: true },
          { key: 'email', path: 'email', encrypt_method: 'aes-256-gcm', encrypt_key: SECRETS.mapperKey },
        ],
      },
    );
    const res = await preview(`pipelines/${p.id}`, { messages: [{ id: 1, email: 'ann@example.com' }] });
    expect(res.status).toBe(200);
    const email = res.body.rows[0].row.email as string;
    expect(email).not.toContain('ann@example.com');
    expect(decryptValue(email, SECRETS.mapperKey)).toBe('ann@example.com');
  });

  it('404, 403 and 422 in the error shapes; nothing is fetched for them', async () => {
    const missing = randomUUID();
    for (const path of [`subscriptions/${missing}`, `pipelines/${missing}`]) {
      const res = await preview(path);
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ detail: expect.any(String) });
    }
    for (const who of [t.outsider, t.stranger]) {
      const res = await preview(`pipelines/${kafkaPipeline.id}`, {}, who.auth);
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ detail: expect.any(String) });
    }
    const sub = `subscriptions/${kafkaPipeline.subscription_id}`;
    for (const [body, loc] of [
      [{ limit: 0 }, ['body', 'limit']],
      [{ limit: 51 }, ['body', 'limit']],
      [{ messages: [] }, ['body', 'messages']],
      [{ limits: 3 }, ['body', 'limits']],
    ] as const) {
      const res = await preview(sub, body);
      expect(res.status).toBe(422);
      expect(res.body.detail).toEqual(expect.arrayContaining([expect.objectContaining({ loc })]));
    }
    const badId = await preview('subscriptions/not-a-uuid');
    expect(badId.status).toBe(422);
    expect(badId.body.detail[0].loc).toEqual(['path', 'id']);
    // A member of the team may preview.
    expect((await preview(sub, { limit: 1 }, t.member.auth)).status).toBe(200);
  });

  it('an unreachable source or a denied target is a 502 with one sentence, within the deadline', async () => {
    const closed = await createPipeline(
      'closed',
      ['KAFKA_SOURCE', { topic, bootstrap_servers: `127.0.0.1:${await freePort()}` }],
      ['POSTGRES_TARGET', pgConfig(target)],
      {
        subscription_target_table_name: table,
        subscription_mapper_config: mapper,
      },
    );
    const started = Date.now();
    const res = await preview(`pipelines/${closed.id}`);
    expect(res.status).toBe(502);
    expect(res.body).toEqual({ detail: expect.stringMatching(/^(Connection refused by|No answer from) /) });
    expect(Date.now() - started).toBeLessThan(12_000);

    const denied = await createPipeline(
      'denied',
      ['KAFKA_SOURCE', kafkaConfig()],
      ['POSTGRES_TARGET', { ...pgConfig(target), host: '169.254.169.254' }],
      {
        subscription_target_table_name: table,
        subscription_mapper_config: mapper,
      },
    );
    const deniedRes = await preview(`pipelines/${denied.id}`);
    expect(deniedRes.status).toBe(502);
    expect(deniedRes.body).toEqual({ detail: expect.stringMatching(/169\.254\.169\.254 are not allowed/) });
  });
});
