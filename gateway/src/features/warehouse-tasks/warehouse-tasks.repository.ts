import { sql, type Transaction } from 'kysely';
import type { Db } from '../../db/database.js';
import { countAllOf, fetchPage, fullCount } from '../../db/paging.js';
import type { Database, WarehouseTaskRow, WarehouseTaskRunRow } from '../../db/schema.js';
import { isUniqueViolation } from '../../db/errors.js';

// SQL of warehouse tasks and their runs (migration 0006).

export type TaskRow = WarehouseTaskRow;
export type RunRow = WarehouseTaskRunRow;
type Executor = Db | Transaction<Database>;

/** How many runs a task keeps (the newest). */
export const RUNS_KEPT = 100;

export function findTask(db: Db, warehouseId: string, taskId: string) {
  return db
    .selectFrom('warehouse_tasks')
    .selectAll()
    .where('warehouse_id', '=', warehouseId)
    .where('id', '=', taskId)
    .executeTakeFirst();
}

export function listTasks(db: Db, warehouseId: string, offset: number, limit: number) {
  const q = db.selectFrom('warehouse_tasks').where('warehouse_id', '=', warehouseId);
  return fetchPage(
    () => q.selectAll().select(fullCount).orderBy('name').orderBy('id').offset(offset).limit(limit).execute(),
    countAllOf(q),
    offset,
  );
}

/** Inserts a task; undefined when the name is taken on this warehouse. */
export async function insertTask(
  db: Db,
  values: Pick<TaskRow, 'warehouse_id' | 'name' | 'statement' | 'schedule' | 'timezone' | 'paused'> & {
    next_run_at: Date | null;
  },
): Promise<TaskRow | undefined> {
  try {
    return await db.insertInto('warehouse_tasks').values(values).returningAll().executeTakeFirstOrThrow();
  } catch (err) {
    if (isUniqueViolation(err)) return undefined;
    throw err;
  }
}

/** Updates a task; undefined when the new name is taken on this warehouse. */
export async function updateTask(
  db: Db,
  id: string,
  values: Partial<Pick<TaskRow, 'name' | 'statement' | 'schedule' | 'timezone' | 'paused' | 'next_run_at'>>,
): Promise<TaskRow | undefined> {
  try {
    return await db
      .updateTable('warehouse_tasks')
      .set({ ...values, updated_at: new Date() })
      .where('id', '=', id)
      .returningAll()
      .executeTakeFirstOrThrow();
  } catch (err) {
    if (isUniqueViolation(err)) return undefined;
    throw err;
  }
}

export async function deleteTask(db: Db, id: string): Promise<void> {
  await db.deleteFrom('warehouse_tasks').where('id', '=', id).execute();
}

/** With a warehouse go its tasks (their runs cascade). */
export async function deleteTasksOf(db: Db, warehouseId: string): Promise<void> {
  await db.deleteFrom('warehouse_tasks').where('warehouse_id', '=', warehouseId).execute();
}

/** The newest `perTask` runs of each task, newest first. */
export async function latestRuns(db: Db, taskIds: string[], perTask: number): Promise<Map<string, RunRow[]>> {
  const out = new Map<string, RunRow[]>(taskIds.map((id) => [id, []]));
  if (taskIds.length === 0) return out;
  const rows = await db
    .selectFrom((eb) =>
      eb
        .selectFrom('warehouse_task_runs')
        .selectAll()
        .select(sql<string>`row_number() over (partition by task_id order by started_at desc, id)`.as('rn'))
        .where('task_id', 'in', taskIds)
        .as('r'),
    )
    .selectAll()
    .where('rn', '<=', String(perTask))
    .orderBy('started_at', 'desc')
    .execute();
  for (const { rn: _rn, ...r } of rows) out.get(r.task_id)?.push(r as RunRow);
  return out;
}

export function listRuns(db: Db, taskId: string, offset: number, limit: number) {
  const q = db.selectFrom('warehouse_task_runs').where('task_id', '=', taskId);
  return fetchPage(
    () =>
      q
        .selectAll()
        .select(fullCount)
        .orderBy('started_at', 'desc')
        .orderBy('id')
        .offset(offset)
        .limit(limit)
        .execute(),
    countAllOf(q),
    offset,
  );
}

/**
 * Claims the tasks due at `now`: locks them (skipping rows another scheduler
 * holds), moves each to its next slot and records its run for the slot it was
 * due at. The unique (task, slot) pair makes a slot run once even if two
 * schedulers raced past the lock. Returns what this scheduler must run.
 */
export async function claimDue(
  db: Db,
  now: Date,
  limit: number,
  runner: string,
  nextSlot: (task: TaskRow) => Date | null,
): Promise<{ task: TaskRow; run: RunRow }[]> {
  return db.transaction().execute(async (trx) => {
    const due = await trx
      .selectFrom('warehouse_tasks')
      .selectAll()
      .where('paused', '=', false)
      .where('next_run_at', '<=', now)
      .orderBy('next_run_at')
      .limit(limit)
      .forUpdate()
      .skipLocked()
      .execute();
    const claimed: { task: TaskRow; run: RunRow }[] = [];
    for (const task of due) {
      await trx
        .updateTable('warehouse_tasks')
        .set({ next_run_at: nextSlot(task) })
        .where('id', '=', task.id)
        .execute();
      const run = await insertRun(trx, {
        task_id: task.id,
        trigger: 'schedule',
        scheduled_for: task.next_run_at,
        started_at: now,
        runner,
      });
      if (run) claimed.push({ task, run });
    }
    return claimed;
  });
}

export function insertRun(
  db: Executor,
  values: Pick<RunRow, 'task_id' | 'trigger' | 'scheduled_for' | 'started_at' | 'runner'>,
): Promise<RunRow | undefined> {
  return db
    .insertInto('warehouse_task_runs')
    .values({ ...values, state: 'RUNNING' })
    .onConflict((oc) => oc.columns(['task_id', 'scheduled_for']).doNothing())
    .returningAll()
    .executeTakeFirst();
}

/** Records how a run ended and keeps the task's newest `RUNS_KEPT` runs. */
export async function finishRun(
  db: Db,
  run: RunRow,
  end: Pick<RunRow, 'state' | 'statement_id' | 'error'> & { finished_at: Date },
): Promise<RunRow | undefined> {
  const row = await db
    .updateTable('warehouse_task_runs')
    .set(end)
    .where('id', '=', run.id)
    .returningAll()
    .executeTakeFirst();
  await db
    .deleteFrom('warehouse_task_runs')
    .where('task_id', '=', run.task_id)
    .where(
      'id',
      'not in',
      db
        .selectFrom('warehouse_task_runs')
        .select('id')
        .where('task_id', '=', run.task_id)
        .orderBy('started_at', 'desc')
        .limit(RUNS_KEPT),
    )
    .execute();
  return row;
}

/** Runs still RUNNING long after any deadline: their gateway stopped mid-run. */
export async function failAbandonedRuns(db: Db, startedBefore: Date, now: Date): Promise<number> {
  const res = await db
    .updateTable('warehouse_task_runs')
    .set({
      state: 'FAILED',
      finished_at: now,
      error: 'The gateway running this task stopped before the run ended; its outcome is unknown',
    })
    .where('state', '=', 'RUNNING')
    .where('started_at', '<', startedBefore)
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}
