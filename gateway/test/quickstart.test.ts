import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { resolve } from 'node:path';
import { describeWithKafka, testKafkaBrokers } from '@sluice/testing/kafka';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { assertWorkerBuilt, eventually, WORKER_PROGRAM } from '@sluice/testing/kafka-helpers';
import { closeScanned, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { startTestGateway, type TestGateway } from './harness.js';
import { readmePipelineBody, REPO_ROOT } from './readme-section.js';

// The README's "A first pipeline" as a new user follows it: the pipeline body
// is read from the README itself (its heredoc, with the shell's variables
// substituted), the messages are sent with scripts/kafka/produce.mjs, and the
// rows are read from the target table the worker created. If the README's
// body stops working, this test fails.

function produce(brokers: string, topic: string, lines: string[]): Promise<void> {
  return new Promise((res, rej) => {
    const child = execFile(
      process.execPath,
      [resolve(REPO_ROOT, 'scripts/kafka/produce.mjs'), brokers, topic],
      (e, _out, stderr) => (e ? rej(new Error(stderr)) : res()),
    );
    child.stdin?.end(lines.map((l) => `${l}\n`).join(''));
  });
}

describeWithKafka(
  "the README's first pipeline: Kafka → PostgreSQL through the REST API (real workers)",
  () => {
    const run = randomUUID().slice(0, 8);
    const kafka = (testKafkaBrokers() ?? []).join(',');
    let gw: TestGateway;
    let t: TeamSetup;
    let target: ScratchDatabase;

    beforeAll(async () => {
      assertWorkerBuilt();
      if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
      target = await createScratchDatabase('quickstart');
      gw = await startTestGateway('pglite', {
        SLUICE_EMBEDDED_OPERATOR: 'true',
        SLUICE_WORKER_COMMAND: JSON.stringify([process.execPath, WORKER_PROGRAM]),
      });
      t = await setupTeam(gw, 'quickstart');
    });
    afterAll(async () => {
      if (gw) await closeScanned(gw);
      await target?.drop();
    });

    const rows = async () =>
      (
        await target.client
          .query(
            'select order_id::int as order_id, customer, total::float as total from public.orders order by 1',
          )
          .catch(() => ({ rows: [] }))
      ).rows as { order_id: number; customer: string; total: number }[];

    it('goes live and its rows appear in the target table; a later message with the same id updates its row', async () => {
      const topic = `orders-${run}`;
      const body = readmePipelineBody('A first pipeline', {
        TEAM: t.teamId,
        KAFKA: kafka,
        PG_HOST: target.settings.host,
        PG_PORT: String(target.settings.port),
        PG_USER: target.settings.user,
      });
      // Its own topic and database, so that other tests' `orders` do not interfere.
      (body.source_config as Record<string, unknown>).topic = topic;
      expect((body.target_config as Record<string, unknown>).database).toBe('postgres');
      (body.target_config as Record<string, unknown>).database = target.settings.database;

      await produce(kafka, topic, [
        '{"id": "1", "customer": {"email": "ana@example.com"}, "amount": {"total": "19.90"}}',
      ]);
      const created = await gw.http.post('/api/pipelines/').set(t.owner.auth).send(body);
      expect(created.status).toBe(201);
      const id = created.body.id as string;
      expect(created.body.target_config.password).toBe('<redacted>');

      expect((await gw.http.post(`/api/pipelines/${id}/start`).set(t.owner.auth)).body).toBe('BUILDING');
      const pipelineNow = async () =>
        (await gw.http.get(`/api/pipelines/${id}`).set(t.owner.auth)).body as Record<string, unknown>;
      const live = await eventually(
        async () =>
          (await gw.http.get(`/api/pipelines/${id}`).set(t.owner.auth)).body as Record<string, unknown>,
        (b) => b.state === 'live' || b.state === 'error',
        40_000,
        250,
      ).catch(pipelineNow);
      if (live.state !== 'live') {
        const diag = async (cid: unknown) => {
          const c = (await gw.http.get(`/api/connectors/${cid as string}`).set(t.owner.auth)).body as object;
          const logs = (await gw.http.get(`/api/connectors/${cid as string}/logs`).set(t.owner.auth)).text;
          return `${JSON.stringify(c)}\n${logs.slice(-3000)}`;
        };
        throw new Error(`${await diag(live.source_connector_id)}\n${await diag(live.target_connector_id)}`);
      }

      const sha = (s: string) => createHash('sha256').update(s).digest('hex');
      expect(await eventually(rows, (r) => r.length >= 1)).toEqual([
        { order_id: 1, customer: sha('ana@example.com'), total: 19.9 },
      ]);

      await produce(kafka, topic, [
        '{"id": "2", "customer": {"email": "ben@example.com"}, "amount": {"total": "5"}}',
        '{"id": "1", "customer": {"email": "ana@example.com"}, "amount": {"total": "21.50"}}',
      ]);
      expect(await eventually(rows, (r) => r.length === 2 && r[0]!.total === 21.5)).toEqual([
        { order_id: 1, customer: sha('ana@example.com'), total: 21.5 },
        { order_id: 2, customer: sha('ben@example.com'), total: 5 },
      ]);
      await gw.http.post(`/api/pipelines/${id}/pause`).set(t.owner.auth);
    }, 180_000);
  },
);
