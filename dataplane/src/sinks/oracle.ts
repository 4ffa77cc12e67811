import type { WorkerConfig } from '@sluice/shared/catalog';
import type { CastType } from '@sluice/shared/mapper';
import type { OutboundPolicy } from '@sluice/shared/net';
import type { Sink, SinkRecord } from '../contracts.js';
import type { Engine } from '../engine.js';
import {
  describeOracleError,
  openOracleSession,
  oracleCode,
  oracleWhere,
  type OracleSession,
  type OracleSettings,
} from '../systems/oracle/connection.js';
import { workerOutboundPolicy } from '../outbound.js';
import { ERROR_KEY_COLUMNS } from '../target/records.js';
import { targetEngine } from '../target/target-loop.js';
import {
  DESCRIBE_SQL,
  deleteStatement,
  describeBinds,
  mergeStatement,
  oracleDdlFor,
  oracleName,
  oracleTableRef,
  plannedOracleTypes,
  qualifiedOracle,
  type ColumnHints,
  type OracleColumn,
  type OracleStatement,
  type OracleTableRef,
} from './oracle-sql.js';
import { planBatch } from './postgres.js';
import { castsByTable } from './target-engines.js';

// The ORACLE_TARGET sink, built like the PostgreSQL one (docs/data-plane.md,
// "Oracle target"): a batch is folded per table and key (planBatch), then
//   1. each table is created or given its new columns — Oracle's DDL commits
//      on its own, so it all runs before the first row of the batch;
//   2. the deletes, then one MERGE per table and column set (executeMany);
//   3. one COMMIT. A failure rolls the rows back (a table or column the batch
//      created stays: creating it again would change nothing).
// Writing a batch twice leaves the tables as writing it once (MERGE by key).

export interface OracleSinkOptions {
  /** Opens a session (the real one: openOracleSession; tests: a recording fake). */
  connect: () => Promise<OracleSession>;
  /** `host:port`, for messages. */
  where: string;
  /** The mapper's casts of a target table's columns (they type new columns). */
  castsFor?: (table: string) => Readonly<Record<string, CastType>> | undefined;
  /** Rows per executeMany call; default 1,000. */
  rowsPerStatement?: number;
}

/** The target refused a batch; the message names the table and the reason, never the SQL or a value. */
export class OracleSinkError extends Error {
  override readonly name = 'OracleSinkError';
}

/** Oracle names of a table's columns → their types. */
type Columns = Map<string, string>;

type TablePlan = ReturnType<typeof planBatch> extends Map<string, infer P> ? P : never;

/**
 * An error table's rows (records.ts) carry the failed message whole: its
 * text columns are CLOBs, so a long message cannot fail the batch that
 * records it.
 */
const ERROR_TABLE_HINTS: ColumnHints = {
  reason: 'clob',
  message: 'clob',
  message_key: 'clob',
  row: 'clob',
  failed_at: 'datetime',
};
const isErrorTable = (plan: TablePlan) => plan.keyColumns.join('\0') === ERROR_KEY_COLUMNS.join('\0');

export function createOracleSink(options: OracleSinkOptions): Sink {
  return new OracleSink(options);
}

/** The sink of an ORACLE_TARGET configuration (secrets resolved), connecting under `policy`. */
export async function openOracleSink(config: WorkerConfig, o: { policy: OutboundPolicy }): Promise<Sink> {
  const settings = config.configuration as unknown as OracleSettings;
  const casts = castsByTable(config);
  return createOracleSink({
    connect: () => openOracleSession(settings, { policy: o.policy, connectTimeoutMs: 15_000 }),
    where: oracleWhere(settings),
    castsFor: (table) => casts.get(table),
  });
}

export const oracleTargetEngine: Engine = targetEngine((config) =>
  openOracleSink(config, { policy: workerOutboundPolicy() }),
);

class OracleSink implements Sink {
  private session: OracleSession | null = null;
  private readonly tables = new Map<string, Columns>();
  private readonly rowsPerStatement: number;

  constructor(private readonly options: OracleSinkOptions) {
    this.rowsPerStatement = options.rowsPerStatement ?? 1000;
  }

  async write(batch: readonly SinkRecord[], signal: AbortSignal, ready?: Promise<void>): Promise<void> {
    if (batch.length === 0) return;
    signal.throwIfAborted();
    let tables: { name: string; ref: OracleTableRef; plan: TablePlan }[];
    try {
      tables = [...planBatch(batch)].map(([name, plan]) => ({ name, ref: oracleTableRef(name), plan }));
    } catch (error) {
      throw new OracleSinkError((error as Error).message);
    }
    await ready;
    signal.throwIfAborted();
    const session = await this.connect();
    // An abort mid-batch closes the session: the server rolls the transaction back.
    const onAbort = () => this.drop(session);
    signal.addEventListener('abort', onAbort, { once: true });
    const learned = new Map<string, Columns>();
    let current = '';
    try {
      for (const t of tables) {
        current = qualifiedOracle(t.ref);
        learned.set(t.name, await this.prepare(session, t.name, t.ref, t.plan));
      }
      for (const t of tables) {
        current = qualifiedOracle(t.ref);
        const columns = learned.get(t.name) as Columns;
        // A truncate: every row, in this transaction (Oracle's TRUNCATE would commit on its own).
        if (t.plan.truncate && columns.size > 0) await session.execute(`DELETE FROM ${current}`);
        await this.deleteKeys(session, t.ref, columns, t.plan);
        await this.mergeRows(session, t.ref, columns, t.plan);
      }
      await session.commit();
      for (const [table, columns] of learned) this.tables.set(table, columns);
    } catch (error) {
      for (const t of tables) this.tables.delete(t.name);
      if (this.session === session) await session.rollback().catch(() => this.drop(session));
      if (signal.aborted)
        throw signal.reason instanceof Error ? signal.reason : new Error('The write was aborted');
      if (error instanceof OracleSinkError) throw error;
      throw new OracleSinkError(`Writing to ${current} failed: ${this.describe(error)}`);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  async close(): Promise<void> {
    const session = this.session;
    this.session = null;
    await session?.close().catch(() => undefined);
  }

  private describe(error: unknown): string {
    return describeOracleError(error, this.options.where);
  }

  private async connect(): Promise<OracleSession> {
    if (this.session) return this.session;
    try {
      this.session = await this.options.connect();
    } catch (error) {
      throw new OracleSinkError(describeOracleError(error, this.options.where, 'connect'));
    }
    return this.session;
  }

  private drop(session: OracleSession): void {
    if (this.session === session) this.session = null;
    void session.close().catch(() => undefined);
  }

  private async describeTable(session: OracleSession, ref: OracleTableRef): Promise<Columns | null> {
    const rows = await session.execute(DESCRIBE_SQL, describeBinds(ref));
    return rows.length === 0 ? null : new Map(rows.map((r) => [String(r[0]), String(r[1])]));
  }

  /** Creates the table or adds the columns this batch brings; the table's columns after it. */
  private async prepare(
    session: OracleSession,
    table: string,
    ref: OracleTableRef,
    plan: TablePlan,
  ): Promise<Columns> {
    const rows = plan.upserts.length > 0 ? plan.upserts : plan.deletes;
    const lacks = (cols: Columns) =>
      rows.some((row) => Object.keys(row).some((c) => !cols.has(oracleName(c))));
    const cached = this.tables.get(table);
    if (cached && !lacks(cached)) return cached;

    const hints = this.options.castsFor?.(table) ?? (isErrorTable(plan) ? ERROR_TABLE_HINTS : {});
    // A concurrent writer may create the table or a column between the look
    // and the DDL (ORA-00955, ORA-01430): look again, once.
    for (let attempt = 1; ; attempt++) {
      const existing = await this.describeTable(session, ref);
      // Only deletes: nothing to create (no table: nothing to delete either).
      if (plan.upserts.length === 0) return existing ?? new Map();
      try {
        for (const ddl of oracleDdlFor(ref, existing, plan.upserts, plan.keyColumns, hints)) {
          await session.execute(ddl);
        }
        return plannedOracleTypes(existing, plan.upserts, plan.keyColumns, hints);
      } catch (error) {
        const raced = ['ORA-00955', 'ORA-01430'].includes(oracleCode(error) ?? '');
        if (!raced || attempt >= 2) throw error;
      }
    }
  }

  private columnsOf(ref: OracleTableRef, columns: Columns, names: readonly string[]): OracleColumn[] {
    return names.map((name) => {
      const type = columns.get(oracleName(name));
      if (type === undefined) {
        throw new OracleSinkError(`Table ${qualifiedOracle(ref)} has no column ${oracleName(name)}`);
      }
      return { name, type };
    });
  }

  private async run(
    session: OracleSession,
    make: (rows: Record<string, unknown>[]) => OracleStatement,
    rows: Record<string, unknown>[],
  ) {
    for (let at = 0; at < rows.length; at += this.rowsPerStatement) {
      const s = make(rows.slice(at, at + this.rowsPerStatement));
      await session.executeMany(s.sql, s.rows, s.bindDefs);
    }
  }

  private async deleteKeys(
    session: OracleSession,
    ref: OracleTableRef,
    columns: Columns,
    plan: TablePlan,
  ): Promise<void> {
    if (plan.deletes.length === 0 || columns.size === 0) return;
    const keys = this.columnsOf(ref, columns, plan.keyColumns);
    await this.run(session, (chunk) => deleteStatement(ref, keys, chunk), plan.deletes);
  }

  private async mergeRows(
    session: OracleSession,
    ref: OracleTableRef,
    columns: Columns,
    plan: TablePlan,
  ): Promise<void> {
    for (const rows of plan.upsertGroups) {
      const cols = this.columnsOf(ref, columns, Object.keys(rows[0] as object));
      await this.run(session, (chunk) => mergeStatement(ref, cols, plan.keyColumns, chunk), rows);
    }
  }
}
