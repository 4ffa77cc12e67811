import { type WarehouseResource } from '@sluice/shared/catalog';
import { runStatement, warehouseIdOf } from '@sluice/shared/databricks';
import { SecretNotFoundError } from '@sluice/shared/ports';
import type { GatewayContext } from '../../context.js';
import { engineClient, resolveToken } from '../warehouses/warehouses.engine.js';
import { deleteTask, finishRun, type RunRow, type TaskRow } from './warehouse-tasks.repository.js';
import { engineError } from '../warehouses/warehouses.service.js';

/**
 * Runs a claimed (or manual) run of a task on its warehouse and records how
 * it ended. The statement's rows are not fetched beyond one and never
 * stored. A task whose warehouse is gone (deleted with kubectl) goes too.
 */
export async function executeRun(
  ctx: GatewayContext,
  task: TaskRow,
  run: RunRow,
  now: () => Date = () => new Date(),
): Promise<RunRow | undefined> {
  const w = await ctx.catalog.get<WarehouseResource>('Warehouse', task.warehouse_id);
  if (!w) {
    await deleteTask(ctx.db, task.id);
    return undefined;
  }
  let end: Pick<RunRow, 'state' | 'statement_id' | 'error'>;
  try {
    const warehouseId = warehouseIdOf(w.spec.httpPath);
    if (!warehouseId.ok) {
      return await finishRun(ctx.db, run, {
        state: 'FAILED',
        statement_id: null,
        error: warehouseId.msg,
        finished_at: now(),
      });
    }
    const token = await resolveToken(ctx, w.metadata.name, w.spec);
    const out = await runStatement(engineClient(ctx, w.spec.serverHostname, token), {
      statement: task.statement,
      warehouseId: warehouseId.value,
      ...(w.spec.catalog !== undefined ? { catalog: w.spec.catalog } : {}),
      ...(w.spec.schema !== undefined ? { schema: w.spec.schema } : {}),
      rowLimit: 1,
      timeoutMs: ctx.config.warehouses.statementTimeoutS * 1000,
    });
    end = {
      state:
        out.state === 'SUCCEEDED' || out.state === 'CLOSED'
          ? 'SUCCEEDED'
          : out.state === 'CANCELED'
            ? 'CANCELED'
            : 'FAILED',
      statement_id: out.statementId,
      error: out.error?.message ?? null,
    };
  } catch (err) {
    const known = engineError(err);
    if (!known && !(err instanceof SecretNotFoundError)) {
      ctx.log.error({ err, taskId: task.id }, 'A warehouse task run failed unexpectedly');
    }
    end = {
      state: 'FAILED',
      statement_id: null,
      error: known
        ? String(known.detail)
        : err instanceof SecretNotFoundError
          ? `The access token cannot be read: ${err.message}`
          : 'Internal error (logged by the gateway)',
    };
  }
  return finishRun(ctx.db, run, { ...end, finished_at: now() });
}
