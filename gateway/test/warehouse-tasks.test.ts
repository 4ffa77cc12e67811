import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { TaskScheduler } from '../src/features/warehouse-tasks/warehouse-tasks.scheduler.js';
import { closeScanned, setupTeam, type TeamSetup } from './catalog-fixtures.js';
import { databaseKinds, startTestGateway, type TestGateway } from './harness.js';
import { createWarehouse, startStandIn, warehouseEnv, type DatabricksStandIn } from './warehouse-fixtures.js';

/**
 * Tasks of a warehouse — named SQL statements on a cron schedule in
 * a time zone — and the scheduler that runs them. Schedulers are driven with
 * an injected clock (no test waits for a minute to pass); two of them on one
 * database (a real PostgreSQL server with a pool of connections, and PGlite)
 * never run a slot twice.
 */
describe.each(databaseKinds())('warehouse tasks on %s', (kind) => {
  let gw: TestGateway;
  let t: TeamSetup;
  let standIn: DatabricksStandIn;
  let warehouse: string;

  beforeAll(async () => {
    standIn = await startStandIn();
    gw = await startTestGateway(kind, warehouseEnv(standIn));
    t = await setupTeam(gw, 'tasks');
    warehouse = (await createWarehouse(gw, t.owner, t.teamId, standIn)).id;
  });
  afterAll(async () => {
    await standIn.close();
    await closeScanned(gw);
  });

  const tasksUrl = (w = warehouse) => `/api/warehouses/${w}/tasks/`;
  const createTask = async (body: Record<string, unknown>, w = warehouse) => {
    const res = await gw.http.post(tasksUrl(w)).set(t.owner.auth).send(body);
    if (res.status !== 201) throw new Error(`task create failed: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as { id: string; next_run_at: string; name: string };
  };
  const runsOf = (id: string) =>
    gw.ctx.db
      .selectFrom('warehouse_task_runs')
      .selectAll()
      .where('task_id', '=', id)
      .orderBy('started_at')
      .execute();
  const taskRow = (id: string) =>
    gw.ctx.db.selectFrom('warehouse_tasks').selectAll().where('id', '=', id).executeTakeFirstOrThrow();

  it('creates a task with its next run computed in its time zone', async () => {
    const res = await gw.http
      .post(tasksUrl())
      .set(t.member.auth)
      .send({ name: 'morning', statement: 'SELECT 1', schedule: '30 6 * * *', timezone: 'Europe/Paris' });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      warehouse_id: warehouse,
      name: 'morning',
      schedule: '30 6 * * *',
      timezone: 'Europe/Paris',
      paused: false,
      last_runs: [],
    });
    const next = new Date(res.body.next_run_at);
    expect(next.getTime()).toBeGreaterThan(Date.now());
    const local = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Paris',
      hour: '2-digit',
      minute: '2-digit',
    }).format(next);
    expect(local).toBe('06:30');
    const list = await gw.http.get(tasksUrl()).set(t.member.auth);
    expect(list.status).toBe(200);
    expect(list.body.items.map((x: { name: string }) => x.name)).toContain('morning');
    expect(list.body).toMatchObject({ page: 1, size: 50 });
  });

  it.each([
    ['six fields (seconds)', { schedule: '*/5 * * * * *' }, 'schedule', /five fields/],
    ['an out-of-range minute', { schedule: '61 * * * *' }, 'schedule', /Invalid cron expression/],
    ['an unknown time zone', { timezone: 'Mars/Olympus' }, 'timezone', /Unknown time zone/],
  ])('refuses %s (422)', async (_l, change, field, msg) => {
    const res = await gw.http
      .post(tasksUrl())
      .set(t.owner.auth)
      .send({ name: `bad-${field}`, statement: 'SELECT 1', schedule: '0 * * * *', ...change });
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      { loc: ['body', field], msg: expect.stringMatching(msg), type: 'value_error' },
    ]);
  });

  it('refuses a duplicate name on the warehouse (409) and callers outside the team (403)', async () => {
    await createTask({ name: 'dup', statement: 'SELECT 1', schedule: '@daily' });
    const dup = await gw.http
      .post(tasksUrl())
      .set(t.owner.auth)
      .send({ name: 'dup', statement: 'SELECT 2', schedule: '@daily' });
    expect(dup.status).toBe(409);
    const outsider = await gw.http
      .post(tasksUrl())
      .set(t.outsider.auth)
      .send({ name: 'x', statement: 'SELECT 1', schedule: '@daily' });
    expect(outsider.status).toBe(403);
    expect((await gw.http.get(tasksUrl()).set(t.stranger.auth)).status).toBe(403);
  });

  it('runs a task now: the run is recorded with its outcome, and listed with the task', async () => {
    const ok = await createTask({ name: 'now-ok', statement: 'INSERT INTO t SELECT 1', schedule: '@yearly' });
    const run = await gw.http.post(`${tasksUrl()}${ok.id}/run`).set(t.member.auth);
    expect(run.status).toBe(200);
    expect(run.body).toMatchObject({
      task_id: ok.id,
      trigger: 'manual',
      scheduled_for: null,
      state: 'SUCCEEDED',
      error: null,
    });
    expect(run.body.statement_id).toEqual(expect.any(String));
    expect(Date.parse(run.body.finished_at)).toBeGreaterThanOrEqual(Date.parse(run.body.started_at));

    const bad = await createTask({
      name: 'now-bad',
      statement: 'SELECT * FROM missing_table',
      schedule: '@yearly',
    });
    const failed = await gw.http.post(`${tasksUrl()}${bad.id}/run`).set(t.owner.auth);
    expect(failed.body).toMatchObject({
      state: 'FAILED',
      error: expect.stringMatching(/TABLE_OR_VIEW_NOT_FOUND/),
    });

    const read = await gw.http.get(`${tasksUrl()}${bad.id}`).set(t.member.auth);
    expect(read.body.last_runs).toEqual([failed.body]);
    const runs = await gw.http.get(`${tasksUrl()}${bad.id}/runs`).set(t.member.auth);
    expect(runs.body).toMatchObject({ total: 1, items: [failed.body] });
    expect((await gw.http.post(`${tasksUrl()}${bad.id}/run`).set(t.outsider.auth)).status).toBe(403);
  });

  it('runs a due task once on its slot and moves it to the next slot; nothing before it is due', async () => {
    const task = await createTask({ name: 'hourly', statement: 'SELECT 1', schedule: '0 * * * *' });
    const due = new Date(task.next_run_at);
    let clock = new Date(due.getTime() - 1000);
    const scheduler = new TaskScheduler(gw.ctx, { now: () => clock, runner: 'solo' });
    // Only this task is asserted: an earlier test's task (06:30 Paris) falls
    // due in the same hour when the suite runs between 05:30 and 06:00 UTC.
    expect((await scheduler.tick()).filter((r) => r.task_id === task.id)).toEqual([]);
    clock = new Date(due.getTime() + 1000);
    const claimed = await scheduler.tick();
    expect(claimed.filter((r) => r.task_id === task.id)).toHaveLength(1);
    await scheduler.idle();
    const runs = await runsOf(task.id);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ trigger: 'schedule', state: 'SUCCEEDED', runner: 'solo' });
    expect(runs[0]?.scheduled_for?.toISOString()).toBe(due.toISOString());
    expect((await taskRow(task.id)).next_run_at?.toISOString()).toBe(
      new Date(due.getTime() + 3600_000).toISOString(),
    );
    // The same instant again: the slot is done.
    expect((await scheduler.tick()).filter((r) => r.task_id === task.id)).toEqual([]);
  });

  it('coalesces slots missed while no scheduler ran into one run (a restart loses nothing)', async () => {
    const task = await createTask({ name: 'every-5', statement: 'SELECT 1', schedule: '*/5 * * * *' });
    const due = new Date(task.next_run_at);
    // A scheduler of a process started three hours later finds the schedule in the database.
    const later = new Date(due.getTime() + 3 * 3600_000 + 60_000);
    const restarted = new TaskScheduler(gw.ctx, { now: () => later, runner: 'restarted' });
    expect((await restarted.tick()).filter((r) => r.task_id === task.id)).toHaveLength(1);
    await restarted.idle();
    expect(await runsOf(task.id)).toHaveLength(1);
    expect((await taskRow(task.id)).next_run_at?.getTime()).toBe(due.getTime() + 3 * 3600_000 + 5 * 60_000);
  });

  it('never runs a slot twice with two schedulers ticking at once', async () => {
    const tasks = [];
    for (let i = 0; i < 12; i++) {
      tasks.push(await createTask({ name: `race-${i}`, statement: 'SELECT 1', schedule: '*/10 * * * *' }));
    }
    const latest = Math.max(...tasks.map((x) => Date.parse(x.next_run_at)));
    const now = new Date(latest + 1000);
    const a = new TaskScheduler(gw.ctx, { now: () => now, runner: 'replica-a', batch: 5 });
    const b = new TaskScheduler(gw.ctx, { now: () => now, runner: 'replica-b', batch: 5 });
    const claimed = [];
    for (let round = 0; round < 4; round++) {
      const [ra, rb] = await Promise.all([a.tick(), b.tick()]);
      claimed.push(...ra, ...rb);
    }
    await Promise.all([a.idle(), b.idle()]);
    const ids = new Set(tasks.map((x) => x.id));
    const mine = claimed.filter((r) => ids.has(r.task_id));
    expect(mine).toHaveLength(12);
    expect(new Set(mine.map((r) => r.task_id)).size).toBe(12);
    for (const task of tasks) {
      const runs = await runsOf(task.id);
      expect(runs).toHaveLength(1);
      expect(runs[0]?.state).toBe('SUCCEEDED');
    }
  });

  it('does not run a paused task; resuming counts the next slot from now', async () => {
    const task = await createTask({
      name: 'pausable',
      statement: 'SELECT 1',
      schedule: '0 3 * * *',
      timezone: 'America/New_York',
    });
    const paused = await gw.http.post(`${tasksUrl()}${task.id}/pause`).set(t.member.auth);
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ paused: true, next_run_at: null });
    const s = new TaskScheduler(gw.ctx, { now: () => new Date(Date.parse(task.next_run_at) + 86_400_000) });
    expect((await s.tick()).filter((r) => r.task_id === task.id)).toEqual([]);
    await s.idle();
    const resumed = await gw.http.post(`${tasksUrl()}${task.id}/resume`).set(t.member.auth);
    expect(resumed.body).toMatchObject({ paused: false, next_run_at: task.next_run_at });
  });

  it('updates a task: a new schedule counts from now, a rename keeps the slot', async () => {
    const task = await createTask({ name: 'editable', statement: 'SELECT 1', schedule: '0 4 * * *' });
    const renamed = await gw.http
      .patch(`${tasksUrl()}${task.id}`)
      .set(t.owner.auth)
      .send({ name: 'edited', statement: 'SELECT 2' });
    expect(renamed.body).toMatchObject({
      name: 'edited',
      statement: 'SELECT 2',
      next_run_at: task.next_run_at,
    });
    const retimed = await gw.http
      .patch(`${tasksUrl()}${task.id}`)
      .set(t.owner.auth)
      .send({ schedule: '15 * * * *', timezone: 'Asia/Kolkata' });
    expect(retimed.status).toBe(200);
    expect(new Date(retimed.body.next_run_at).getUTCMinutes()).toBe(45); // :15 in UTC+05:30
    const bad = await gw.http.patch(`${tasksUrl()}${task.id}`).set(t.owner.auth).send({ schedule: 'often' });
    expect(bad.status).toBe(422);
  });

  it('deletes a task with its runs', async () => {
    const task = await createTask({ name: 'doomed', statement: 'SELECT 1', schedule: '@hourly' });
    await gw.http.post(`${tasksUrl()}${task.id}/run`).set(t.owner.auth);
    expect((await gw.http.delete(`${tasksUrl()}${task.id}`).set(t.outsider.auth)).status).toBe(403);
    expect((await gw.http.delete(`${tasksUrl()}${task.id}`).set(t.member.auth)).status).toBe(204);
    expect((await gw.http.get(`${tasksUrl()}${task.id}`).set(t.owner.auth)).status).toBe(404);
    expect(await runsOf(task.id)).toEqual([]);
  });

  it('marks runs whose gateway stopped mid-run as failed', async () => {
    const task = await createTask({ name: 'orphan', statement: 'SELECT 1', schedule: '@hourly' });
    const old = new Date(Date.now() - 24 * 3600_000);
    await gw.ctx.db
      .insertInto('warehouse_task_runs')
      .values({
        task_id: task.id,
        trigger: 'schedule',
        scheduled_for: old,
        started_at: old,
        state: 'RUNNING',
        runner: 'gone',
      })
      .execute();
    const s = new TaskScheduler(gw.ctx);
    await s.tick();
    await s.idle();
    const [run] = await runsOf(task.id);
    expect(run).toMatchObject({
      state: 'FAILED',
      error: expect.stringMatching(/stopped before the run ended/),
    });
  });

  it('removes the tasks of a warehouse that was deleted behind the API’s back when they come due', async () => {
    const w = await createWarehouse(gw, t.owner, t.teamId, standIn);
    const task = await createTask({ name: 'stranded', statement: 'SELECT 1', schedule: '@hourly' }, w.id);
    await gw.ctx.cluster.delete('Warehouse', gw.ctx.config.namespace, w.id);
    const s = new TaskScheduler(gw.ctx, { now: () => new Date(Date.parse(task.next_run_at) + 1000) });
    await s.tick();
    await s.idle();
    expect(
      await gw.ctx.db.selectFrom('warehouse_tasks').selectAll().where('id', '=', task.id).execute(),
    ).toEqual([]);
  });
});
