import pg from 'pg';
import type { CastType } from '@sluice/shared/mapper';
import type { OutboundPolicy } from '@sluice/shared/net';
import type { Sink, SinkRecord } from '../contracts.js';
import {
  connectClient,
  pgConfig,
  pgWhere,
  quoteIdent,
  type PostgresSettings,
} from '../systems/postgres/connection.js';
import { describePgFailure } from '../systems/postgres/errors.js';
import { ddlFor, plannedTypes, qualified, type TableRef } from './postgres-ddl.js';

// The POSTGRES_TARGET sink. One batch = one transaction: the DDL it needs
// (PostgreSQL's DDL is transactional), a truncate's `DELETE` of every row,
// the deletes, then one
// `INSERT … SELECT … FROM unnest(…) ON CONFLICT (key) DO UPDATE` per table and
// column set (5,000 rows per statement: the fastest measured on these
// machines). A batch that fails leaves nothing behind, and writing a batch
// twice leaves the table as writing it once. docs/data-plane-postgres.md.

export interface PostgresTargetSettings extends PostgresSettings {
  /** Schema of the target tables; default `public`. */
  schema?: string;
}

export interface PostgresSinkOptions {
  /** The mapper's casts of a target table's columns (they type new columns); none → inferred from values. */
  castsFor?: (table: string) => Readonly<Record<string, CastType>> | undefined;
  /** Rows per INSERT statement; default 5,000. */
  rowsPerStatement?: number;
  /** Outbound-address policy (SSRF); none → no check (tests, trusted hosts). */
  policy?: OutboundPolicy;
  applicationName?: string;
}

/** The target refused a batch; the message names the table and the server's reason, never the SQL. */
export class PostgresSinkError extends Error {
  override readonly name = 'PostgresSinkError';
}

interface TableState {
  /** Column → type (format_type), as the table has them. */
  columns: Map<string, string>;
}

/** What one batch does to one table, once repeated keys are folded. */
interface TablePlan {
  keyColumns: string[];
  /** Every row goes first (a truncate; the batch's rows before it are already left out). */
  truncate: boolean;
  /** Keys to delete first (a delete, or a delete followed by a re-insert). */
  deletes: Record<string, unknown>[];
  /** The last row of each upserted key (rows of one key merged, later values winning). */
  upserts: Record<string, unknown>[];
  /** `upserts` by column set (byColumnSet): one statement each. */
  upsertGroups: Record<string, unknown>[][];
}

const DESCRIBE_SQL = `
  select a.attname as name, format_type(a.atttypid, a.atttypmod) as type
    from pg_attribute a
    join pg_class c on c.oid = a.attrelid
    join pg_namespace n on n.oid = c.relnamespace
   where n.nspname = $1 and c.relname = $2 and c.relkind in ('r', 'p')
     and a.attnum > 0 and not a.attisdropped
   order by a.attnum`;

const UNIQUE_KEYS_SQL = `
  select array(select a.attname::text from unnest(i.indkey) k
                 join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k) as cols
    from pg_index i
    join pg_class c on c.oid = i.indrelid
    join pg_namespace n on n.oid = c.relnamespace
   where n.nspname = $1 and c.relname = $2 and i.indisunique
     and i.indpred is null and i.indexprs is null`;

/** The columns of a table and their types (format_type); null when there is no such table. */
export async function describeTable(client: pg.Client, ref: TableRef): Promise<Map<string, string> | null> {
  const { rows } = await client.query<{ name: string; type: string }>(DESCRIBE_SQL, [ref.schema, ref.table]);
  return rows.length === 0 ? null : new Map(rows.map((r) => [r.name, r.type]));
}

/**
 * Why an existing table cannot take upserts by `keyColumns` (no primary key
 * or unique index on exactly them), or null when it can. The sink refuses
 * such a table; the preview endpoint reports it.
 */
export async function uniqueKeyProblem(
  client: pg.Client,
  ref: TableRef,
  keyColumns: readonly string[],
): Promise<string | null> {
  const { rows } = await client.query<{ cols: string[] }>(UNIQUE_KEYS_SQL, [ref.schema, ref.table]);
  const wanted = [...keyColumns].sort().join('\0');
  if (rows.some((r) => [...r.cols].sort().join('\0') === wanted)) return null;
  return `Table ${qualified(ref)} has no primary key or unique index on (${keyColumns.join(', ')}), the subscription's primary-key columns: upserts need one`;
}

export function createPostgresSink(
  settings: PostgresTargetSettings,
  options: PostgresSinkOptions = {},
): Sink {
  return new PostgresSink(settings, options);
}

class PostgresSink implements Sink {
  private client: pg.Client | null = null;
  /** SQL → name of the prepared statements of `client`. */
  private readonly prepared = new Map<string, string>();
  private readonly tables = new Map<string, TableState>();
  private readonly schema: string;
  private readonly rowsPerStatement: number;

  constructor(
    private readonly settings: PostgresTargetSettings,
    private readonly options: PostgresSinkOptions,
  ) {
    this.schema = settings.schema ?? 'public';
    this.rowsPerStatement = options.rowsPerStatement ?? 5000;
  }

  async write(batch: readonly SinkRecord[], signal: AbortSignal, ready?: Promise<void>): Promise<void> {
    if (batch.length === 0) return;
    signal.throwIfAborted();
    const plans = planBatch(batch);
    // One statement is atomic on its own: BEGIN and COMMIT would only add two
    // round trips to the steady state of a busy pipeline. Its parameters are
    // built before `ready`, while the previous batch's offsets are committed.
    const one = this.oneStatement(plans);
    await ready;
    signal.throwIfAborted();
    const client = await this.connect();
    // An abort mid-batch closes the connection: the server rolls the
    // transaction back, and the next write reconnects.
    const onAbort = () => this.drop(client);
    signal.addEventListener('abort', onAbort, { once: true });
    const learned = new Map<string, TableState>();
    let current: TableRef = { schema: this.schema, table: '' };
    const transaction = one === null;
    try {
      if (one) {
        current = one.ref;
        await this.run(client, one.sql, one.params);
      }
      if (transaction) await client.query('BEGIN');
      for (const [table, plan] of transaction ? plans : []) {
        current = { schema: this.schema, table };
        const state = await this.prepare(client, current, plan);
        learned.set(table, state);
        // DELETE rather than TRUNCATE: the privilege the sink has already, and no lock that stops readers.
        if (plan.truncate && state.columns.size > 0) await client.query(`delete from ${qualified(current)}`);
        await this.deleteKeys(client, current, state, plan);
        await this.upsertRows(client, current, state, plan);
      }
      if (transaction) await client.query('COMMIT');
      for (const [table, state] of learned) this.tables.set(table, state);
    } catch (error) {
      // The DDL of this batch was rolled back with it: forget what it taught.
      for (const table of plans.keys()) this.tables.delete(table);
      if (transaction && this.client === client)
        await client.query('ROLLBACK').catch(() => this.drop(client));
      if (signal.aborted)
        throw signal.reason instanceof Error ? signal.reason : new Error('The write was aborted');
      if (error instanceof PostgresSinkError) throw error;
      throw new PostgresSinkError(
        `Writing to ${qualified(current)} failed: ${describePgFailure(error, pgWhere(this.settings))}`,
      );
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  async close(): Promise<void> {
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => undefined);
  }

  private async connect(): Promise<pg.Client> {
    if (this.client) return this.client;
    const policy = this.options.policy;
    const client = await connectClient(
      this.settings,
      (tls, tunnel) => {
        const c = new pg.Client(
          pgConfig(this.settings, {
            ...(policy ? { policy } : {}),
            applicationName: this.options.applicationName ?? 'sluice-postgres-target',
            ...(tls === undefined ? {} : { tls }),
            ...(tunnel ? { tunnel } : {}),
          }),
        );
        // A broken connection is dropped; the next write opens another.
        c.on('error', () => this.drop(c));
        return c;
      },
      policy ? { policy } : {},
    ).catch((error: unknown) => {
      throw new PostgresSinkError(describePgFailure(error, pgWhere(this.settings)));
    });
    this.client = client;
    this.prepared.clear();
    return client;
  }

  private drop(client: pg.Client): void {
    if (this.client === client) this.client = null;
    void client.end().catch(() => undefined);
  }

  /**
   * The batch's one upsert statement when it is a single statement on a
   * table already known to have every column it brings (no DDL, no deletes,
   * one column set); else null.
   */
  private oneStatement(
    plans: Map<string, TablePlan>,
  ): { ref: TableRef; sql: string; params: (string | null)[][] } | null {
    if (plans.size !== 1) return null;
    const [table, plan] = [...plans][0] as [string, TablePlan];
    const known = this.tables.get(table);
    const rows = plan.upsertGroups[0];
    if (!known || !rows || plan.upsertGroups.length !== 1 || plan.deletes.length > 0 || plan.truncate)
      return null;
    if (rows.length > this.rowsPerStatement || needsColumn(known.columns, plan)) return null;
    const ref = { schema: this.schema, table };
    const statement = upsertStatement(ref, known, plan.keyColumns, rows);
    return { ref, sql: statement.sql, params: statement.params(rows) };
  }

  /**
   * Runs a statement as a named prepared statement of the connection: the
   * server parses and plans a batch's upsert once, not for every batch.
   * Past MAX_PREPARED distinct statements (column sets), unnamed.
   */
  private async run(client: pg.Client, sql: string, params: (string | null)[][]): Promise<void> {
    let name = this.prepared.get(sql);
    if (name === undefined && this.prepared.size < MAX_PREPARED) {
      name = `sluice_upsert_${this.prepared.size}`;
      this.prepared.set(sql, name);
    }
    await client.query(
      name === undefined ? { text: sql, values: params } : { name, text: sql, values: params },
    );
  }

  /** Creates the table or adds the columns this batch brings, and checks the key is unique there. */
  private async prepare(client: pg.Client, ref: TableRef, plan: TablePlan): Promise<TableState> {
    const cached = this.tables.get(ref.table);
    if (cached && !needsColumn(cached.columns, plan)) return cached;

    const existing = await describeTable(client, ref);
    const casts = this.options.castsFor?.(ref.table) ?? {};
    if (plan.upserts.length === 0) {
      // Only deletes (or a truncate): nothing to create (no table: nothing to delete either).
      return { columns: existing ?? new Map() };
    }
    for (const statement of ddlFor(ref, existing, plan.upserts, plan.keyColumns, casts)) {
      await client.query(statement);
    }
    if (existing !== null) await this.checkUniqueKey(client, ref, plan.keyColumns);
    // After `IF NOT EXISTS` a concurrent creator may have won: read back what is there.
    const columns =
      existing === null
        ? await describeTable(client, ref)
        : plannedTypes(existing, plan.upserts, plan.keyColumns, casts);
    return { columns: columns ?? plannedTypes(null, plan.upserts, plan.keyColumns, casts) };
  }

  private async checkUniqueKey(
    client: pg.Client,
    ref: TableRef,
    keyColumns: readonly string[],
  ): Promise<void> {
    const problem = await uniqueKeyProblem(client, ref, keyColumns);
    if (problem) throw new PostgresSinkError(problem);
  }

  private async deleteKeys(
    client: pg.Client,
    ref: TableRef,
    state: TableState,
    plan: TablePlan,
  ): Promise<void> {
    if (plan.deletes.length === 0 || state.columns.size === 0) return;
    const keys = plan.keyColumns;
    const casts = keys.map((k, i) => `u.c${i}::${typeOf(state, ref, k)} as ${quoteIdent(k)}`);
    const join = keys.map((k) => `t.${quoteIdent(k)} = d.${quoteIdent(k)}`).join(' and ');
    for (let at = 0; at < plan.deletes.length; at += this.rowsPerStatement) {
      const chunk = plan.deletes.slice(at, at + this.rowsPerStatement);
      const params = keys.map((k) => chunk.map((row) => toText(row[k], state.columns.get(k) ?? 'text')));
      await client.query(
        `delete from ${qualified(ref)} t using (select ${casts.join(', ')} from unnest(${keys
          .map((_, i) => `$${i + 1}::text[]`)
          .join(', ')}) as u(${keys.map((_, i) => `c${i}`).join(', ')})) d where ${join}`,
        params,
      );
    }
  }

  private async upsertRows(
    client: pg.Client,
    ref: TableRef,
    state: TableState,
    plan: TablePlan,
  ): Promise<void> {
    for (const rows of plan.upsertGroups) {
      const statement = upsertStatement(ref, state, plan.keyColumns, rows);
      for (let at = 0; at < rows.length; at += this.rowsPerStatement) {
        await this.run(client, statement.sql, statement.params(rows.slice(at, at + this.rowsPerStatement)));
      }
    }
  }
}

/** Named statements per connection at most (one per table and column set in use). */
const MAX_PREPARED = 100;

/**
 * The upsert of rows that share their columns (those of `rows[0]`): `INSERT
 * … SELECT … FROM unnest($1::text[], …) ON CONFLICT (key) DO UPDATE`, and
 * the text[] parameters of a chunk of them.
 */
function upsertStatement(
  ref: TableRef,
  state: TableState,
  keyColumns: readonly string[],
  rows: readonly Record<string, unknown>[],
): { sql: string; params(chunk: readonly Record<string, unknown>[]): (string | null)[][] } {
  const columns = Object.keys(rows[0] ?? {});
  const types = columns.map((c) => typeOf(state, ref, c));
  const nonKey = columns.filter((c) => !keyColumns.includes(c));
  const conflict = nonKey.length
    ? `do update set ${nonKey.map((c) => `${quoteIdent(c)} = excluded.${quoteIdent(c)}`).join(', ')}`
    : 'do nothing';
  const sql = `insert into ${qualified(ref)} (${columns.map(quoteIdent).join(', ')})
        select ${columns.map((_, i) => `u.c${i}::${types[i]}`).join(', ')}
          from unnest(${columns.map((_, i) => `$${i + 1}::text[]`).join(', ')}) as u(${columns
            .map((_, i) => `c${i}`)
            .join(', ')})
        on conflict (${keyColumns.map(quoteIdent).join(', ')}) ${conflict}`;
  return {
    sql,
    params: (chunk) => columns.map((c, i) => chunk.map((row) => toText(row[c], types[i] as string))),
  };
}

function typeOf(state: TableState, ref: TableRef, column: string): string {
  const type = state.columns.get(column);
  if (type === undefined) {
    throw new PostgresSinkError(`Table ${qualified(ref)} has no column "${column}"`);
  }
  return type;
}

/** True when a row of the plan brings a column the table (as `columns` has it) lacks. */
function needsColumn(columns: ReadonlyMap<string, string>, plan: TablePlan): boolean {
  // The rows of a group share their columns: its first row speaks for it.
  const rows = plan.upserts.length > 0 ? plan.upsertGroups.map((g) => g[0] ?? {}) : plan.deletes;
  return rows.some((row) => Object.keys(row).some((c) => !columns.has(c)));
}

/**
 * `rows` grouped by their columns, for one statement each: a row without a
 * column then leaves that column as it is, rather than nulling it. Columns
 * are compared in their order, which a subscription's mapper keeps fixed (a
 * same set in another order only costs one more statement; sorting every
 * row's keys was measured at 2% of a busy worker's CPU).
 */
export function byColumnSet(rows: readonly Record<string, unknown>[]): Record<string, unknown>[][] {
  const groups = new Map<string, Record<string, unknown>[]>();
  for (const row of rows) {
    const signature = Object.keys(row).join('\0');
    const group = groups.get(signature);
    if (group) group.push(row);
    else groups.set(signature, [row]);
  }
  return [...groups.values()];
}

/**
 * Folds a batch per table and key, in order: consecutive upserts of a key
 * merge (later values win); a delete forgets the upserts before it and
 * schedules the key's delete, which runs before the upserts, so "delete then
 * insert" ends with only the new row's values. A truncate forgets everything
 * of its table before it and empties the table first.
 */
export function planBatch(batch: readonly SinkRecord[]): Map<string, TablePlan> {
  const byTable = new Map<
    string,
    {
      /** Null until a row of the table brings them (a truncate has none). */
      keyColumns: string[] | null;
      truncate: boolean;
      keys: Map<string, { deleted: boolean; row: Record<string, unknown> | null; keyValues: unknown[] }>;
    }
  >();
  for (const record of batch) {
    if (record.op === 'truncate') {
      const table = byTable.get(record.table);
      if (table) table.keys.clear();
      byTable.set(record.table, {
        keyColumns: table?.keyColumns ?? null,
        truncate: true,
        keys: table?.keys ?? new Map(),
      });
      continue;
    }
    if (record.keyColumns.length === 0) {
      throw new PostgresSinkError(
        `Rows for table "${record.table}" have no primary-key column: a database target needs one (mapper primary_key)`,
      );
    }
    let table = byTable.get(record.table);
    if (!table) {
      table = { keyColumns: null, truncate: false, keys: new Map() };
      byTable.set(record.table, table);
    }
    const keyColumns = (table.keyColumns ??= [...record.keyColumns]);
    const keyValues = keyColumns.map((k) => record.row[k]);
    if (keyValues.some((v) => v === null || v === undefined)) {
      throw new PostgresSinkError(
        `A row for table "${record.table}" has no value for a primary-key column (${keyColumns.join(', ')})`,
      );
    }
    // One key column (the common case) needs no JSON: type and text identify it.
    const id =
      keyValues.length === 1 ? `${typeof keyValues[0]}:${String(keyValues[0])}` : JSON.stringify(keyValues);
    let entry = table.keys.get(id);
    if (!entry) {
      entry = { deleted: false, row: null, keyValues };
      table.keys.set(id, entry);
    }
    if (record.op === 'delete') {
      entry.deleted = true;
      entry.row = null;
    } else {
      // Rows are never modified: the first is kept as it is, merges copy.
      entry.row = entry.row ? { ...entry.row, ...record.row } : record.row;
    }
  }
  const plans = new Map<string, TablePlan>();
  for (const [name, table] of byTable) {
    const keyColumns = table.keyColumns ?? [];
    const deletes: Record<string, unknown>[] = [];
    const upserts: Record<string, unknown>[] = [];
    for (const entry of table.keys.values()) {
      if (entry.deleted) deletes.push(Object.fromEntries(keyColumns.map((k, i) => [k, entry.keyValues[i]])));
      if (entry.row) upserts.push(entry.row);
    }
    plans.set(name, {
      keyColumns,
      truncate: table.truncate,
      deletes,
      upserts,
      upsertGroups: byColumnSet(upserts),
    });
  }
  return plans;
}

/** A value as the text PostgreSQL parses for a column of `type` (all parameters travel as text[]). */
function toText(value: unknown, type: string): string | null {
  if (value === null || value === undefined) return null;
  if (type === 'jsonb' || type === 'json') return JSON.stringify(value);
  switch (typeof value) {
    case 'string':
      return value;
    case 'number':
    case 'bigint':
    case 'boolean':
      return String(value);
    case 'object':
      if (value instanceof Date) return value.toISOString();
      if (Array.isArray(value) && type.endsWith('[]')) return arrayLiteral(value);
      return JSON.stringify(value);
    default:
      return String(value);
  }
}

/** A PostgreSQL array literal, for array-typed columns of a table the user created. */
function arrayLiteral(values: readonly unknown[]): string {
  const items = values.map((v) => {
    if (v === null || v === undefined) return 'NULL';
    if (Array.isArray(v)) return arrayLiteral(v);
    const text = typeof v === 'object' ? JSON.stringify(v) : String(v);
    return `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
  });
  return `{${items.join(',')}}`;
}
