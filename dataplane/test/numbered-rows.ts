import { createHash } from 'node:crypto';
import type pg from 'pg';
import { Admin } from '@platformatic/kafka';
import type { WorkerConfig } from '@sluice/shared/catalog';
import { createScratchDatabase, testPostgresUrl, type ScratchDatabase } from '@sluice/testing/postgres';
import { assertWorkerBuilt, type TextMessage } from '@sluice/testing/kafka-helpers';

// What the PostgreSQL source's integrity tests share: the scratch database
// and topic they run against and the worker's configuration; numbered rows whose
// every version is computed from (id, version) alone, so a test knows what
// each change must carry and checks it by a checksum on arrival; the SQL that
// writes them in one transaction; and the slot's state as the server records
// it. The values are made to stress the path from the WAL to the broker:
// lengths from 10 to about 400 bytes (messages straddle socket reads), text
// with quotes, backslashes, control and multi-byte characters, numeric and
// jsonb.

export const NUMBERED_TABLE = 'public.numbered';

export const CREATE_NUMBERED_TABLE = `create table ${NUMBERED_TABLE} (
  id int primary key, version int not null, label text not null, amount numeric(12,2) not null, doc jsonb not null)`;

/**
 * What a PostgreSQL source test runs against: a scratch database (named
 * from `prefix`) holding the numbered table, and `topic` created with
 * `partitions` on the test broker. `close` deletes the topic and drops the
 * database. Needs the built worker program and SLUICE_TEST_DATABASE_URL.
 */
export interface NumberedSource {
  db: ScratchDatabase;
  admin: Admin;
  close(): Promise<void>;
}

export async function numberedSource(
  prefix: string,
  brokers: string[],
  topic: string,
  partitions: number,
): Promise<NumberedSource> {
  assertWorkerBuilt();
  if (!testPostgresUrl()) throw new Error('needs SLUICE_TEST_DATABASE_URL (scripts/with-postgres.sh)');
  const db = await createScratchDatabase(prefix);
  let admin: Admin | undefined;
  const close = async () => {
    await admin?.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin?.close();
    await db.drop();
  };
  try {
    await db.client.query(CREATE_NUMBERED_TABLE);
    admin = new Admin({ clientId: 'sluice-test-admin', bootstrapBrokers: brokers });
    await admin.createTopics({ topics: [topic], partitions, replicas: 1 });
  } catch (e) {
    await close();
    throw e;
  }
  return { db, admin, close };
}

/** The configuration of a POSTGRES_SOURCE worker capturing the numbered table of `db` into `topic`. */
export function numberedSourceConfig(
  connectorId: string,
  db: ScratchDatabase,
  topic: string,
  run: string,
): WorkerConfig {
  return {
    connector_id: connectorId,
    connector_type: 'POSTGRES_SOURCE',
    role: 'source',
    configuration: { ...db.settings, whitelist: [NUMBERED_TABLE] },
    datamodels: [{ id: `dm-${run}`, name: 'numbered', entry: NUMBERED_TABLE, enabled: true, topic }],
  };
}

export interface NumberedRow {
  id: number;
  version: number;
  label: string;
  amount: string;
  doc: { n: number; v: number; tags: string[]; nested: { text: string } };
}

/** Characters, not UTF-16 units: a slice never splits the emoji's surrogate pair (jsonb refuses half of one). */
const ALPHABET = Array.from('abc "quoted" back\\slash\ttab\nnewline é € 🙂 {"json":[1,2]} ');

/** The content of row `id` at `version`. */
export function numberedRow(id: number, version: number): NumberedRow {
  const length = 10 + ((id * 7 + version * 13) % 300);
  const start = (id + version) % ALPHABET.length;
  const label = Array.from({ length }, (_, i) => ALPHABET[(start + i) % ALPHABET.length]).join('');
  return {
    id,
    version,
    label: `#${id}.${version} ${label}`,
    amount: (((id * 37 + version * 101) % 10_000_000) / 100).toFixed(2),
    doc: {
      n: id,
      v: version,
      tags: Array.from({ length: (id + version) % 5 }, (_, i) => `t${(id * 3 + i) % 17}`),
      nested: { text: Array.from(label).slice(0, 12).join('') },
    },
  };
}

/** JSON with object keys sorted at every level (jsonb does not keep the writer's order). */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** SHA-256 of a row's values as the change event carries them (`after`), or of a delete's key. */
export function rowChecksum(row: Record<string, unknown> | null, deletedId?: unknown): string {
  const values =
    row === null ? ['deleted', deletedId] : [row.id, row.version, row.label, row.amount, row.doc];
  return createHash('sha256').update(canonical(values)).digest('hex');
}

/** One transaction's inserts, updates (to the rows' given versions) and deletes; returns its WAL bounds. */
export async function writeTransaction(
  client: pg.Client,
  change: { inserts?: NumberedRow[]; updates?: NumberedRow[]; deletes?: number[] },
): Promise<{ before: bigint; after: bigint }> {
  // The rows travel as one JSON document, read back into columns by the server.
  const columns = 'x(id int, version int, label text, amount numeric, doc jsonb)';
  await client.query('begin');
  try {
    if (change.inserts?.length) {
      await client.query(
        `insert into ${NUMBERED_TABLE} select * from jsonb_to_recordset($1::jsonb) as ${columns}`,
        [JSON.stringify(change.inserts)],
      );
    }
    if (change.updates?.length) {
      await client.query(
        `update ${NUMBERED_TABLE} t set version = x.version, label = x.label, amount = x.amount, doc = x.doc
           from jsonb_to_recordset($1::jsonb) as ${columns} where t.id = x.id`,
        [JSON.stringify(change.updates)],
      );
    }
    if (change.deletes?.length) {
      await client.query(`delete from ${NUMBERED_TABLE} where id = any($1::int[])`, [change.deletes]);
    }
    // Every record of the transaction lies after `before`, its commit record's end at or before `after`.
    const before = await walInsertLsn(client);
    await client.query('commit');
    return { before, after: await walInsertLsn(client) };
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  }
}

export const lsnToBigInt = (text: string): bigint => {
  const [hi = '0', lo = '0'] = text.split('/');
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
};

async function walInsertLsn(client: pg.Client): Promise<bigint> {
  const { rows } = await client.query<{ lsn: string }>('select pg_current_wal_insert_lsn()::text as lsn');
  return lsnToBigInt((rows[0] as { lsn: string }).lsn);
}

/** The slot's state as the server records it: held by a session, and the position confirmed to it. */
export async function slotState(
  client: pg.Client,
  slot: string,
): Promise<{ active: boolean; confirmed: bigint } | undefined> {
  const { rows } = await client.query<{ active: boolean; lsn: string | null }>(
    'select active, confirmed_flush_lsn::text as lsn from pg_replication_slots where slot_name = $1',
    [slot],
  );
  const row = rows[0];
  return row ? { active: row.active, confirmed: lsnToBigInt(row.lsn ?? '0/0') } : undefined;
}

/**
 * Waits until the slot's confirmed position reaches `lsn`. Between polls it
 * writes a row of its own to `tick` (an unpublished table): that moves the
 * server's sent position past `lsn`, so an idle source acknowledges it even
 * when `lsn` lies past the end of the last captured commit.
 */
export async function untilConfirmed(
  client: pg.Client,
  slot: string,
  lsn: bigint,
  failFast: () => string | undefined,
  ms = 90_000,
): Promise<void> {
  await client.query('create table if not exists public.tick (at timestamptz default now())');
  const deadline = Date.now() + ms;
  for (;;) {
    const state = await slotState(client, slot);
    if (state && state.confirmed >= lsn) return;
    const failure = failFast();
    if (failure) throw new Error(failure);
    if (Date.now() > deadline) {
      throw new Error(`slot ${slot} confirmed ${state?.confirmed.toString(16)}, not ${lsn.toString(16)}`);
    }
    await client.query('insert into public.tick default values');
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A change event read back from the broker, with where it was read. */
export interface ArrivedEvent {
  partition: number;
  offset: bigint;
  id: number;
  op: string;
  /** The row's version (a delete: -1). */
  version: number;
  checksum: string;
  position: string;
}

export function arrivedEvents(messages: readonly TextMessage[]): ArrivedEvent[] {
  return messages.map((m) => {
    const event = JSON.parse(m.value) as {
      op: string;
      after: Record<string, unknown> | null;
      key: { id: number };
      source: { position: string };
    };
    return {
      partition: m.partition,
      offset: m.offset,
      id: event.key.id,
      op: event.op,
      version: event.after === null ? -1 : Number(event.after.version),
      checksum: rowChecksum(event.after, event.key.id),
      position: event.source.position,
    };
  });
}

/**
 * What a test inserting rows 1..`rows` (version 0) finds wrong in what
 * arrived: the ids that never did, and the events that are not the insert of
 * their row as written (another operation, another content, an id out of
 * range). Duplicates are not faults here: delivery is at least once.
 */
export function lostOrAltered(
  events: readonly ArrivedEvent[],
  rows: number,
): { missing: number[]; wrong: ArrivedEvent[] } {
  const seen = new Set(events.map((e) => e.id));
  return {
    missing: Array.from({ length: rows }, (_, i) => i + 1).filter((id) => !seen.has(id)),
    wrong: events.filter(
      (e) =>
        e.op !== 'c' || e.id < 1 || e.id > rows || e.checksum !== rowChecksum({ ...numberedRow(e.id, 0) }),
    ),
  };
}
