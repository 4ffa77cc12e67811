import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { managedSecretName, type SluiceKind } from '@sluice/shared/ports';
import { deletionRunner, stopDeletionRunner } from '../src/features/deletions/deletions.runner.js';
import { createContext, createLogger } from '../src/server.js';
import { configs, createEnv, SECRETS } from './catalog-fixtures.js';
import { databaseKinds, type TestUser } from './harness.js';
import { startRestartableGateway, type RestartableGateway } from './restartable-gateway.js';
import { createWarehouse, startStandIn, warehouseEnv, type DatabricksStandIn } from './warehouse-fixtures.js';

// Deleting a team or an environment (docs/api.md "Deletions"): 204 at once,
// the team and every object of its teams gone from every read (a
// superuser's lists too), and every object removed in the background as one
// tracked deletion — custom resources in dependency order, their managed
// secrets, a warehouse's tasks — that a superuser follows and that a
// gateway restart resumes. An import that leaves a team out does the same.
// The objects here have no running workers (see deletions-pipelines.test.ts
// for live pipelines on the real broker and a PostgreSQL slot).

const KINDS = ['pipelines', 'subscriptions', 'datamodels', 'connectors', 'warehouses'] as const;
const CLUSTER_KIND: Record<(typeof KINDS)[number], SluiceKind> = {
  pipelines: 'Pipeline',
  subscriptions: 'Subscription',
  datamodels: 'DataModel',
  connectors: 'Connector',
  warehouses: 'Warehouse',
};
const rules = [
  { key: 'id', path: 'id', cast: 'int', primary_key: true },
  { key: 'email', path: 'email', encrypt_method: 'aes-256-gcm', encrypt_key: SECRETS.mapperKey },
];

describe.each(databaseKinds())('deleting teams and environments on %s', (kind) => {
  let standIn: DatabricksStandIn;
  let gw: RestartableGateway;
  beforeAll(async () => {
    standIn = await startStandIn();
  });
  afterAll(async () => {
    await standIn?.close();
  });
  afterEach(async () => {
    await gw?.close();
  });

  const start = async (env: Record<string, string> = {}) => {
    gw = await startRestartableGateway(kind, { ...warehouseEnv(standIn), ...env });
    const owner = await gw.user();
    const admin = await gw.superuser();
    const envId = await createEnv(gw, owner, `env-${randomUUID()}`);
    return { owner, admin, envId };
  };
  const newTeam = async (u: TestUser, envId: string) => {
    const res = await gw.http
      .post(`/api/teams/?env_id=${envId}`)
      .set(u.auth)
      .send({ name: `team-${randomUUID().slice(0, 8)}` });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  const post = async (u: TestUser, path: string, body: Record<string, unknown>) => {
    const res = await gw.http.post(path).set(u.auth).send(body);
    if (res.status !== 201) throw new Error(`${path}: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as Record<string, unknown> & { id: string };
  };

  /** One object of every kind, each with its managed secret where it has one; the ids by kind. */
  const fill = async (u: TestUser, teamId: string) => {
    const tag = randomUUID().slice(0, 8);
    const pipeline = await post(u, '/api/pipelines/', {
      name: `p-${tag}`,
      team_id: teamId,
      source_name: `p-src-${tag}`,
      source_type: 'KAFKA_SOURCE',
      source_config: configs.kafkaSource(`t-${tag}`),
      target_name: `p-dst-${tag}`,
      target_type: 'KAFKA_TARGET',
      target_config: configs.kafkaTarget(),
      subscription_target_table_name: `out-${tag}`,
      subscription_mapper_config: rules.slice(0, 1),
    });
    const pgSource = await post(u, '/api/connectors/', {
      name: `crm-${tag}`,
      team_id: teamId,
      connector_type: 'POSTGRES_SOURCE',
      json_configuration: configs.pgSource(['public.users', 'public.deals']),
    });
    const pgTarget = await post(u, '/api/connectors/', {
      name: `dwh-${tag}`,
      team_id: teamId,
      connector_type: 'POSTGRES_TARGET',
      json_configuration: configs.pgTarget(),
    });
    const dms = pgSource.datamodel_ids as string[];
    const sub = await post(u, '/api/subscriptions/', {
      datamodel_id: dms[0],
      target_connector_id: pgTarget.id,
      mapper_config: rules,
    });
    const warehouse = await createWarehouse(gw, u, teamId, standIn, { name: `wh-${tag}` });
    await post(u, `/api/warehouses/${warehouse.id}/tasks/`, {
      name: `nightly-${tag}`,
      statement: 'select 1',
      schedule: '0 3 * * *',
    });
    return {
      pipelines: [pipeline.id],
      subscriptions: [pipeline.subscription_id as string, sub.id],
      datamodels: [...dms, pipeline.datamodel_id as string],
      connectors: [
        pipeline.source_connector_id as string,
        pipeline.target_connector_id as string,
        pgSource.id,
        pgTarget.id,
      ],
      warehouses: [warehouse.id],
    };
  };
  type Objects = Awaited<ReturnType<typeof fill>>;

  const listed = async (u: TestUser, k: (typeof KINDS)[number]) =>
    ((await gw.http.get(`/api/${k}/?size=100`).set(u.auth)).body as { items: { id: string }[] }).items.map(
      (i) => i.id,
    );
  /** Nothing of `o` in a superuser's lists or reads. */
  const expectInvisible = async (admin: TestUser, o: Objects) => {
    for (const k of KINDS) {
      const ids = await listed(admin, k);
      for (const id of o[k]) expect(ids).not.toContain(id);
      expect((await gw.http.get(`/api/${k}/${o[k][0]}`).set(admin.auth)).status).toBe(404);
    }
  };
  /** Nothing of `o` left in the cluster, the secret store or the warehouse tasks. */
  const expectGone = async (o: Objects) => {
    const ns = gw.ctx.config.namespace;
    for (const k of KINDS)
      for (const id of o[k]) expect(await gw.ctx.cluster.get(CLUSTER_KIND[k], ns, id)).toBeUndefined();
    for (const [owner, ids] of [
      ['connector', o.connectors],
      ['subscription', o.subscriptions],
      ['warehouse', o.warehouses],
    ] as const) {
      for (const id of ids)
        expect(await gw.ctx.secretStore.get(ns, managedSecretName(owner, id))).toBeUndefined();
    }
    const tasks = await gw.ctx.db
      .selectFrom('warehouse_tasks')
      .select('id')
      .where('warehouse_id', 'in', o.warehouses)
      .execute();
    expect(tasks).toEqual([]);
  };
  const expectPresent = async (admin: TestUser, o: Objects) => {
    for (const k of KINDS) {
      const ids = await listed(admin, k);
      for (const id of o[k]) expect(ids).toContain(id);
    }
    const ns = gw.ctx.config.namespace;
    expect(await gw.ctx.secretStore.get(ns, managedSecretName('connector', o.connectors[2]!))).toBeDefined();
  };
  const deletions = async (admin: TestUser) =>
    ((await gw.http.get('/api/deletions/').set(admin.auth)).body as { items: Record<string, unknown>[] })
      .items;
  const finished = async (admin: TestUser, id: string, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const res = await gw.http.get(`/api/deletions/${id}`).set(admin.auth);
      expect(res.status).toBe(200);
      if (res.body.state === 'succeeded') return res.body as Record<string, unknown>;
      if (Date.now() > deadline) throw new Error(`deletion not done: ${JSON.stringify(res.body)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  const all = (n: number) => ({ total: n, deleted: n });

  it('DELETE /teams/{id}: 204, the team and its objects gone from every read at once; the deletion removes every object with its secrets and tasks, and a superuser follows it', async () => {
    const { owner, admin, envId } = await start();
    const teamId = await newTeam(owner, envId);
    const otherTeam = await newTeam(owner, envId);
    const doomed = await fill(owner, teamId);
    const kept = await fill(owner, otherTeam);
    await expectPresent(admin, doomed);
    const managed = `/api/k8s-secrets/${managedSecretName('connector', doomed.connectors[2]!)}`;
    expect((await gw.http.delete(managed).set(admin.auth)).status).toBe(409);

    expect((await gw.http.delete(`/api/teams/${teamId}`).set(owner.auth)).status).toBe(204);
    // At once (this gateway runs no periodic jobs, so nothing is removed yet): 404 and unlisted.
    expect((await gw.http.get(`/api/teams/${teamId}`).set(admin.auth)).status).toBe(404);
    expect((await gw.http.delete(`/api/teams/${teamId}`).set(owner.auth)).status).toBe(404);
    await expectInvisible(admin, doomed);
    await expectInvisible(owner, doomed);
    const [pending] = await deletions(admin);
    expect(pending).toMatchObject({
      kind: 'team',
      target_id: teamId,
      env_id: envId,
      team_ids: [teamId],
      state: 'pending',
      requested_by: owner.id,
    });
    // Only superusers follow deletions.
    expect((await gw.http.get('/api/deletions/').set(owner.auth)).status).toBe(403);
    expect((await gw.http.get(`/api/deletions/${pending!.id}`).set(owner.auth)).status).toBe(403);
    expect((await gw.http.get(`/api/deletions/${randomUUID()}`).set(admin.auth)).status).toBe(404);

    // The runner's tick (every replica running the periodic jobs has one).
    expect(await deletionRunner(gw.ctx).resume()).toEqual([pending!.id]);
    await deletionRunner(gw.ctx).idle();
    const done = await finished(admin, pending!.id as string);
    expect(done).toMatchObject({
      state: 'succeeded',
      step: null,
      message: null,
      attempts: 1,
      progress: {
        pipelines: all(1),
        subscriptions: all(2),
        datamodels: all(3),
        connectors: all(4),
        warehouses: all(1),
      },
    });
    expect(done.finished_at).toEqual(expect.any(String));
    await expectGone(doomed);
    // The managed secrets are gone, not left for a superuser to meet as "deleted with the resource".
    expect((await gw.http.delete(managed).set(admin.auth)).status).toBe(404);
    const secrets = (await gw.http.get('/api/k8s-secrets').set(admin.auth)).body as unknown;
    expect(JSON.stringify(secrets)).not.toContain(doomed.connectors[2]);
    // The other team of the environment keeps everything.
    await expectPresent(admin, kept);
    expect((await deletions(admin)).map((d) => d.state)).toEqual(['succeeded']);
    expect((await gw.http.get('/api/deletions/?state=pending').set(admin.auth)).body.items).toEqual([]);
  }, 120_000);

  it('DELETE /envs/{id}: every team of the environment goes with its objects; a replica running the periodic jobs starts at once', async () => {
    const { owner, admin, envId } = await start({
      SLUICE_SCHEDULER: 'true',
      SLUICE_SCHEDULER_INTERVAL_MS: '60000',
    });
    const [a, b] = [await newTeam(owner, envId), await newTeam(owner, envId)];
    const objects = [await fill(owner, a), await fill(owner, b)];
    const elsewhere = await createEnv(gw, owner, `other-${randomUUID()}`);
    const survivor = await fill(owner, await newTeam(owner, elsewhere));

    expect((await gw.http.delete(`/api/envs/${envId}`).set(owner.auth)).status).toBe(204);
    expect((await gw.http.get(`/api/envs/${envId}`).set(admin.auth)).status).toBe(404);
    expect((await gw.http.get(`/api/teams/${a}`).set(admin.auth)).status).toBe(404);
    for (const o of objects) await expectInvisible(admin, o);
    const [deletion] = await deletions(admin);
    expect(deletion).toMatchObject({ kind: 'env', target_id: envId });
    expect([...(deletion!.team_ids as string[])].sort()).toEqual([a, b].sort());
    // No tick within the test: the delete itself started the deletion on this replica.
    const done = await finished(admin, deletion!.id as string);
    expect(done.progress).toEqual({
      pipelines: all(2),
      subscriptions: all(4),
      datamodels: all(6),
      connectors: all(8),
      warehouses: all(2),
    });
    for (const o of objects) await expectGone(o);
    await expectPresent(admin, survivor);
  }, 120_000);

  it('POST /users/import-all that leaves a team out deletes it as DELETE /teams/{id} does', async () => {
    const { owner, admin, envId } = await start();
    const [kept, dropped] = [await newTeam(owner, envId), await newTeam(owner, envId)];
    const keep = await fill(owner, kept);
    const drop = await fill(owner, dropped);
    const doc = (await gw.http.get('/api/users/export-all').set(admin.auth)).body as {
      teams: { id: string }[];
      team_members: { team_id: string }[];
    };
    const res = await gw.http
      .post('/api/users/import-all')
      .set(admin.auth)
      .send({
        ...doc,
        teams: doc.teams.filter((t) => t.id !== dropped),
        team_members: doc.team_members.filter((m) => m.team_id !== dropped),
      });
    expect(res.status).toBe(204);
    await expectInvisible(admin, drop);
    const [deletion] = await deletions(admin);
    expect(deletion).toMatchObject({
      kind: 'team',
      target_id: dropped,
      team_ids: [dropped],
      state: 'pending',
    });
    await deletionRunner(gw.ctx).resume();
    await deletionRunner(gw.ctx).idle();
    await finished(admin, deletion!.id as string);
    await expectGone(drop);
    await expectPresent(admin, keep);
  }, 120_000);

  (kind === 'postgres' ? it : it.skip)(
    'two replicas on one database: one of them claims a deletion and runs it',
    async () => {
      const { owner, admin, envId } = await start();
      const teamId = await newTeam(owner, envId);
      const o = await fill(owner, teamId);
      expect((await gw.http.delete(`/api/teams/${teamId}`).set(owner.auth)).status).toBe(204);
      const [deletion] = await deletions(admin);
      const replica = await createContext(gw.ctx.config, createLogger('silent'));
      try {
        const [a, b] = await Promise.all([deletionRunner(gw.ctx).resume(), deletionRunner(replica).resume()]);
        expect([...a, ...b]).toEqual([deletion!.id]);
        await Promise.all([deletionRunner(gw.ctx).idle(), deletionRunner(replica).idle()]);
        expect(await finished(admin, deletion!.id as string)).toMatchObject({ attempts: 1 });
        // Done: neither claims it again.
        expect([
          ...(await deletionRunner(gw.ctx).resume()),
          ...(await deletionRunner(replica).resume()),
        ]).toEqual([]);
      } finally {
        await stopDeletionRunner(replica);
        await replica.closeDb();
      }
      await expectGone(o);
    },
    120_000,
  );

  it('a gateway restart resumes a deletion: one recorded before the stop, and one whose replica died holding it', async () => {
    const { owner, admin, envId } = await start();
    const [t1, t2] = [await newTeam(owner, envId), await newTeam(owner, envId)];
    const [o1, o2] = [await fill(owner, t1), await fill(owner, t2)];
    expect((await gw.http.delete(`/api/teams/${t1}`).set(owner.auth)).status).toBe(204);
    expect((await gw.http.delete(`/api/teams/${t2}`).set(owner.auth)).status).toBe(204);
    const [second, first] = await deletions(admin);
    // A replica claimed the second one, deleted its pipeline, and died without letting go.
    await gw.ctx.catalog.delete('Pipeline', o2.pipelines[0]!);
    await gw.ctx.db
      .updateTable('deletions')
      .set({
        state: 'running',
        runner: 'a-replica-that-died',
        step: 'pipelines',
        attempts: 1,
        progress: JSON.stringify({
          pipelines: all(1),
          subscriptions: { total: 0, deleted: 0 },
          datamodels: { total: 0, deleted: 0 },
          connectors: { total: 0, deleted: 0 },
          warehouses: { total: 0, deleted: 0 },
        }),
        lease_until: new Date(Date.now() + 3000),
      })
      .where('id', '=', second!.id as string)
      .execute();

    await gw.restart({ SLUICE_SCHEDULER: 'true', SLUICE_SCHEDULER_INTERVAL_MS: '200' });
    expect(await finished(admin, first!.id as string)).toMatchObject({ attempts: 1 });
    // Taken over once its lease lapsed, where it stood.
    const taken = await finished(admin, second!.id as string);
    expect(taken).toMatchObject({
      attempts: 2,
      progress: { pipelines: all(1), subscriptions: all(2), connectors: all(4), warehouses: all(1) },
    });
    await expectGone(o1);
    await expectGone(o2);
    await expectInvisible(admin, o1);
  }, 120_000);
});
