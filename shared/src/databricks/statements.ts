import {
  TERMINAL_STATES,
  type DatabricksClient,
  type StatementResponse,
  type StatementState,
} from './client.js';

// The statement relay: submit through the SQL Statement Execution API, wait
// (first inside the submit call, `wait_timeout`, then by polling the
// statement) until it ends or the deadline passes, and cancel it then. The
// result comes back inline as JSON_ARRAY, at most `rowLimit` rows; nothing is
// stored.

export interface StatementRun {
  statement: string;
  warehouseId: string;
  catalog?: string;
  schema?: string;
  /** At most this many rows come back (`row_limit`; the response says `truncated`). */
  rowLimit: number;
  /** The statement is cancelled when it has not ended by then (ms from submission). */
  timeoutMs: number;
}

export interface StatementOutcome {
  statementId: string | null;
  /** The engine's terminal state; a statement cancelled at the deadline is CANCELED with `timedOut`. */
  state: StatementState;
  timedOut: boolean;
  error: { code: string | null; message: string; sqlState: string | null } | null;
  columns: { name: string; type: string | null }[];
  rows: (string | null)[][];
  /** Rows in the whole result (may exceed `rows.length` when truncated). */
  totalRowCount: number | null;
  truncated: boolean;
}

export interface RelayClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const realClock: RelayClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** `wait_timeout` is `0s` or 5–50 s: block as long as the deadline allows, at most 10 s per call. */
export function waitTimeoutFor(remainingMs: number): string {
  const s = Math.floor(remainingMs / 1000);
  return s < 5 ? '0s' : `${Math.min(s, 10)}s`;
}

function outcome(res: StatementResponse, timedOut = false): StatementOutcome {
  const columns = (res.manifest?.schema?.columns ?? []).map((c) => ({
    name: c.name,
    type: c.type_text ?? c.type_name ?? null,
  }));
  const rows = res.status.state === 'SUCCEEDED' ? (res.result?.data_array ?? []) : [];
  const err = res.status.error;
  const chunks = res.manifest?.total_chunk_count ?? 1;
  return {
    statementId: res.statement_id ?? null,
    state: res.status.state,
    timedOut,
    error:
      err || res.status.state === 'FAILED'
        ? {
            code: err?.error_code ?? null,
            message: err?.message ?? `The statement ended ${res.status.state}`,
            sqlState: res.status.sql_state ?? null,
          }
        : null,
    columns,
    rows,
    totalRowCount: res.manifest?.total_row_count ?? (res.status.state === 'SUCCEEDED' ? rows.length : null),
    truncated: Boolean(res.manifest?.truncated) || chunks > 1,
  };
}

export async function runStatement(
  client: DatabricksClient,
  run: StatementRun,
  clock: RelayClock = realClock,
  pollMs = { first: 250, max: 2000 },
): Promise<StatementOutcome> {
  const deadline = clock.now() + run.timeoutMs;
  let res = await client.executeStatement({
    statement: run.statement,
    warehouse_id: run.warehouseId,
    ...(run.catalog !== undefined ? { catalog: run.catalog } : {}),
    ...(run.schema !== undefined ? { schema: run.schema } : {}),
    wait_timeout: waitTimeoutFor(run.timeoutMs),
    on_wait_timeout: 'CONTINUE',
    disposition: 'INLINE',
    format: 'JSON_ARRAY',
    row_limit: run.rowLimit,
  });
  let pause = pollMs.first;
  while (!TERMINAL_STATES.includes(res.status.state)) {
    const remaining = deadline - clock.now();
    if (remaining <= 0) {
      const seconds = Math.round(run.timeoutMs / 100) / 10;
      let message = `The statement did not finish within ${seconds} s and was cancelled`;
      try {
        await client.cancelStatement(res.statement_id);
      } catch (err) {
        // It may still run on the engine: say so rather than claim a cancellation.
        message = `The statement did not finish within ${seconds} s; cancelling it failed: ${(err as Error).message}`;
      }
      return {
        ...outcome({ ...res, status: { state: 'CANCELED' } }, true),
        error: { code: 'TIMEOUT', message, sqlState: null },
      };
    }
    await clock.sleep(Math.min(pause, remaining));
    pause = Math.min(pause * 2, pollMs.max);
    res = await client.getStatement(res.statement_id);
  }
  return outcome(res);
}
