import type pg from 'pg';
import { cdcNames } from '@sluice/shared/connectors';
import { pgWhere } from '../../systems/postgres/connection.js';
import { describePgFailure } from '../../systems/postgres/errors.js';
import { formatLsn, parseLsn } from '../pgoutput.js';
import {
  PostgresCdcError,
  type PostgresCdcCapture,
  type PostgresCdcOptions,
  type PostgresSourceSettings,
} from './contract.js';
import {
  connector,
  ensurePublication,
  MARK_SNAPSHOT_DONE,
  recordSnapshotDone,
  SLOT_PATTERN,
  waitForSlotRelease,
} from './setup.js';
import { readSnapshot, type SlotSnapshot } from './snapshot.js';
import { ReplicationStream } from './stream.js';
import { parseEntry } from './tables.js';

// The POSTGRES_SOURCE capture: logical replication with pgoutput, a
// publication and a slot per connector. The first start creates both, the
// slot with an exported snapshot; each whitelisted table is read (op `r`) in a
// REPEATABLE READ transaction on that snapshot, and streaming then starts at
// the slot's consistent point, so no change is missed or doubled between the
// snapshot and the stream. A change is acknowledged to the server (standby
// status update) at its transaction's commit, only after `onEvent` resolved
// for every event of the transaction and `flush` resolved after them: the
// slot's confirmed position is what a restart resumes from. While more of the
// stream is already received, commits are acknowledged together at the next
// flush, so a busy source costs one publish round trip per batch of
// transactions rather than one per event. docs/data-plane-postgres.md.
// The parts: setup.ts (connections, publication, slot), snapshot.ts,
// stream.ts; cleanup.ts drops what setup made.

/**
 * Starts the capture: publication and slot created when missing, then (in
 * `done`) the initial snapshot when the slot is new, and the stream. Resolves
 * once connected with the slot in hand.
 */
export async function startPostgresCdc(
  settings: PostgresSourceSettings,
  options: PostgresCdcOptions,
  signal: AbortSignal,
): Promise<PostgresCdcCapture> {
  if ((settings.plugin_name ?? 'pgoutput') !== 'pgoutput') {
    throw new PostgresCdcError(
      `The ${settings.plugin_name} plug-in is not supported by this version of Sluice: use pgoutput`,
    );
  }
  const { slot, publication } = cdcNames(options.connectorId, settings);
  if (!SLOT_PATTERN.test(slot)) throw new PostgresCdcError(`"${slot}" is not a valid replication slot name`);
  const tables = options.tables.map((t) => ({ ...t, ...parseEntry(t.entry) }));
  const byEntry = new Map(tables.map((t) => [`${t.schema}.${t.table}`, t]));
  const connect = connector(settings, options.policy);

  const admin = await connect(false);
  let replication: pg.Client | null = null;
  try {
    const pub = await ensurePublication(admin, publication, tables, options.log);
    const found = await admin.query<{ lsn: string; active: boolean }>(
      `select confirmed_flush_lsn::text as lsn, active from pg_replication_slots
        where slot_name = $1 and database = current_database()`,
      [slot],
    );
    let existing = found.rows[0];
    if (existing?.active) await waitForSlotRelease(admin, slot);
    // A slot whose snapshot never completed (a crash mid-snapshot) is made anew: the snapshot is redone.
    if (existing && pub.owned && !(pub.comment ?? '').includes(MARK_SNAPSHOT_DONE)) {
      await admin.query('select pg_drop_replication_slot($1)', [slot]);
      existing = undefined;
    }
    replication = await connect(true);
    let snapshot: SlotSnapshot | null = null;
    let acked: bigint;
    if (existing) {
      acked = parseLsn(existing.lsn);
    } else {
      const created = await replication.query<{ consistent_point: string; snapshot_name: string }>(
        `CREATE_REPLICATION_SLOT ${slot} LOGICAL pgoutput EXPORT_SNAPSHOT`,
      );
      const row = created.rows[0] as { consistent_point: string; snapshot_name: string };
      snapshot = { name: row.snapshot_name, lsn: parseLsn(row.consistent_point) };
      acked = snapshot.lsn;
      options.log?.('info', `created replication slot ${slot} at ${row.consistent_point}`);
    }
    const run = new ReplicationStream(
      admin,
      replication,
      options,
      byEntry,
      slot,
      publication,
      acked,
      signal,
      pgWhere(settings),
    );
    const done = (async () => {
      if (snapshot) {
        await readSnapshot(admin, snapshot, tables, options, signal);
        if (pub.owned) await recordSnapshotDone(admin, publication);
      }
      await run.stream();
    })().finally(() => run.close());
    return { done, acknowledgedLsn: () => formatLsn(run.acked) };
  } catch (error) {
    await replication?.end().catch(() => undefined);
    await admin.end().catch(() => undefined);
    if (error instanceof PostgresCdcError) throw error;
    throw new PostgresCdcError(
      `Starting the capture of ${settings.database} failed: ${describePgFailure(error, pgWhere(settings))}`,
    );
  }
}
