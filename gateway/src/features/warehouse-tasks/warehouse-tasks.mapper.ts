import type { TaskRead, TaskRunRead } from '@sluice/shared/schemas';
import { toIso, toIsoOrNull } from '../../db/timestamps.js';
import type { RunRow, TaskRow } from './warehouse-tasks.repository.js';

export function toRunRead(r: RunRow): TaskRunRead {
  return {
    id: r.id,
    task_id: r.task_id,
    trigger: r.trigger,
    scheduled_for: toIsoOrNull(r.scheduled_for),
    started_at: toIso(r.started_at),
    finished_at: toIsoOrNull(r.finished_at),
    state: r.state,
    statement_id: r.statement_id,
    error: r.error,
  };
}

export function toTaskRead(t: TaskRow, runs: RunRow[]): TaskRead {
  return {
    id: t.id,
    warehouse_id: t.warehouse_id,
    name: t.name,
    statement: t.statement,
    schedule: t.schedule,
    timezone: t.timezone,
    paused: t.paused,
    next_run_at: toIsoOrNull(t.next_run_at),
    last_runs: runs.map(toRunRead),
    created_at: toIso(t.created_at),
    updated_at: toIso(t.updated_at),
  };
}
