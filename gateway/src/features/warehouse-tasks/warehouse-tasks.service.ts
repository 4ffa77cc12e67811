import { hostname } from 'node:os';
import type { TaskCreate, TaskRead, TaskRunRead, TaskUpdate } from '@sluice/shared/schemas';
import type { Principal } from '../../auth/principal.js';
import type { GatewayContext } from '../../context.js';
import { conflict, notFound, unprocessable, type ValidationIssue } from '../../http/errors.js';
import { offsetOf, pageOf } from '../../http/pagination.js';
import { checkSchedule, checkTimezone, nextRunAfter } from './warehouse-tasks.schedule.js';
import { executeRun } from './warehouse-tasks.runner.js';
import * as repo from './warehouse-tasks.repository.js';
import { toRunRead, toTaskRead } from './warehouse-tasks.mapper.js';
import { loadWarehouse } from '../warehouses/warehouses.service.js';

// Tasks of a warehouse: named SQL statements on a cron schedule. Reading
// needs membership of the warehouse's team, and so does writing (every team
// member has write access, docs/api.md "Permissions"). The scheduler
// (warehouse-tasks.scheduler.ts) runs them; "run now" runs one at once, in the request.

/** Runs shown with a task. */
const LAST_RUNS = 5;

async function loadTask(ctx: GatewayContext, p: Principal, warehouseId: string, taskId: string) {
  await loadWarehouse(ctx, p, warehouseId);
  const task = await repo.findTask(ctx.db, warehouseId, taskId);
  if (!task) throw notFound('Task not found');
  return task;
}

async function read(ctx: GatewayContext, task: repo.TaskRow): Promise<TaskRead> {
  const runs = await repo.latestRuns(ctx.db, [task.id], LAST_RUNS);
  return toTaskRead(task, runs.get(task.id) ?? []);
}

function checkTiming(schedule: string | undefined, timezone: string | undefined): void {
  const issues: ValidationIssue[] = [];
  const s = schedule === undefined ? undefined : checkSchedule(schedule);
  if (s) issues.push({ loc: ['body', 'schedule'], msg: s, type: 'value_error' });
  const tz = timezone === undefined ? undefined : checkTimezone(timezone);
  if (tz) issues.push({ loc: ['body', 'timezone'], msg: tz, type: 'value_error' });
  if (issues.length > 0) throw unprocessable(issues);
}

const taken = (name: string) => conflict(`A task named "${name}" already exists on this warehouse`);

export async function listTasks(
  ctx: GatewayContext,
  p: Principal,
  warehouseId: string,
  q: { page: number; size: number },
) {
  await loadWarehouse(ctx, p, warehouseId);
  const { rows, total } = await repo.listTasks(ctx.db, warehouseId, offsetOf(q.page, q.size), q.size);
  const runs = await repo.latestRuns(
    ctx.db,
    rows.map((t) => t.id),
    LAST_RUNS,
  );
  return pageOf(
    rows.map((t) => toTaskRead(t, runs.get(t.id) ?? [])),
    total,
    q.page,
    q.size,
  );
}

export async function createTask(ctx: GatewayContext, p: Principal, warehouseId: string, body: TaskCreate) {
  await loadWarehouse(ctx, p, warehouseId);
  const timezone = body.timezone ?? 'UTC';
  checkTiming(body.schedule, timezone);
  const schedule = body.schedule.trim();
  const paused = body.paused ?? false;
  const task = await repo.insertTask(ctx.db, {
    warehouse_id: warehouseId,
    name: body.name,
    statement: body.statement,
    schedule,
    timezone,
    paused,
    next_run_at: paused ? null : nextRunAfter(schedule, timezone, new Date()),
  });
  if (!task) throw taken(body.name);
  return read(ctx, task);
}

export async function getTask(ctx: GatewayContext, p: Principal, warehouseId: string, taskId: string) {
  return read(ctx, await loadTask(ctx, p, warehouseId, taskId));
}

export async function updateTask(
  ctx: GatewayContext,
  p: Principal,
  warehouseId: string,
  taskId: string,
  body: TaskUpdate,
) {
  const task = await loadTask(ctx, p, warehouseId, taskId);
  checkTiming(body.schedule, body.timezone);
  const schedule = body.schedule?.trim() ?? task.schedule;
  const timezone = body.timezone ?? task.timezone;
  const retimed = schedule !== task.schedule || timezone !== task.timezone;
  const updated = await repo.updateTask(ctx.db, task.id, {
    ...(body.name !== undefined ? { name: body.name } : {}),
    ...(body.statement !== undefined ? { statement: body.statement } : {}),
    schedule,
    timezone,
    // A new schedule counts from now; an unchanged one keeps its next slot.
    ...(retimed && !task.paused ? { next_run_at: nextRunAfter(schedule, timezone, new Date()) } : {}),
  });
  if (!updated) throw taken(body.name ?? task.name);
  return read(ctx, updated);
}

/** Pause clears the next slot; resume counts the next one from now (missed slots are not made up). */
export async function setPaused(
  ctx: GatewayContext,
  p: Principal,
  warehouseId: string,
  taskId: string,
  paused: boolean,
) {
  const task = await loadTask(ctx, p, warehouseId, taskId);
  if (task.paused === paused) return read(ctx, task);
  const updated = await repo.updateTask(ctx.db, task.id, {
    paused,
    next_run_at: paused ? null : nextRunAfter(task.schedule, task.timezone, new Date()),
  });
  return read(ctx, updated ?? task);
}

export async function deleteTask(ctx: GatewayContext, p: Principal, warehouseId: string, taskId: string) {
  const task = await loadTask(ctx, p, warehouseId, taskId);
  await repo.deleteTask(ctx.db, task.id);
}

/** Runs the task now, in this request (paused or not; its schedule is untouched), and returns the run. */
export async function runTaskNow(
  ctx: GatewayContext,
  p: Principal,
  warehouseId: string,
  taskId: string,
): Promise<TaskRunRead> {
  const task = await loadTask(ctx, p, warehouseId, taskId);
  const run = await repo.insertRun(ctx.db, {
    task_id: task.id,
    trigger: 'manual',
    scheduled_for: null,
    started_at: new Date(),
    runner: `api:${hostname()}:${process.pid}`,
  });
  if (!run) throw new Error('A manual run could not be recorded');
  const done = await executeRun(ctx, task, run);
  if (!done) throw notFound('Warehouse not found');
  return toRunRead(done);
}

export async function listRuns(
  ctx: GatewayContext,
  p: Principal,
  warehouseId: string,
  taskId: string,
  q: { page: number; size: number },
) {
  const task = await loadTask(ctx, p, warehouseId, taskId);
  const { rows, total } = await repo.listRuns(ctx.db, task.id, offsetOf(q.page, q.size), q.size);
  return pageOf(rows.map(toRunRead), total, q.page, q.size);
}
