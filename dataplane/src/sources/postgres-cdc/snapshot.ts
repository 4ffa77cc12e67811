import type pg from 'pg';
import { changeEvent } from '../../contracts.js';
import { quoteLiteral } from '../../systems/postgres/connection.js';
import { readPaged } from '../paged-read.js';
import { decodeValue, formatLsn } from '../pgoutput.js';
import type { PostgresCdcOptions, PostgresCdcTable } from './contract.js';
import { primaryKey, qualifiedEntry } from './tables.js';

/** The slot's exported snapshot and its consistent point, where the stream starts after it. */
export interface SlotSnapshot {
  name: string;
  lsn: bigint;
}

/**
 * The initial snapshot: each whitelisted table read (op `r`) in one
 * REPEATABLE READ transaction on the slot's exported snapshot, through a
 * cursor fetched a page at a time (../paged-read.ts), each table's events
 * flushed once it is read.
 */
export async function readSnapshot(
  admin: pg.Client,
  { name, lsn }: SlotSnapshot,
  tables: readonly (PostgresCdcTable & { schema: string; table: string })[],
  options: PostgresCdcOptions,
  signal: AbortSignal,
): Promise<void> {
  const fetchRows = options.snapshotFetchRows ?? 1000;
  const position = formatLsn(lsn);
  const types = { getTypeParser: (oid: number) => (text: string) => decodeValue(oid, text) };
  await admin.query('begin isolation level repeatable read, read only');
  try {
    await admin.query(`set transaction snapshot ${quoteLiteral(name)}`);
    for (const t of tables) {
      const from = qualifiedEntry(t);
      const key = (await primaryKey(admin, from)) ?? [];
      const ts = Date.now();
      await admin.query(`declare sluice_snapshot no scroll cursor for select * from ${from}`);
      const fetchPage = async () =>
        (
          await admin.query<Record<string, unknown>>({
            text: `fetch ${fetchRows} from sluice_snapshot`,
            types,
          })
        ).rows;
      await readPaged(
        fetchRows,
        fetchPage,
        (row) =>
          options.onEvent(
            changeEvent({
              op: 'r',
              before: null,
              after: row,
              keyColumns: key,
              connector_id: options.connectorId,
              datamodel_id: t.datamodelId,
              entry: `${t.schema}.${t.table}`,
              position,
              snapshot: true,
              tsMs: ts,
            }),
          ),
        signal,
      );
      await admin.query('close sluice_snapshot');
      await options.flush?.();
      options.log?.('info', `snapshot of ${t.schema}.${t.table} complete`);
    }
    await admin.query('commit');
  } catch (error) {
    await admin.query('rollback').catch(() => undefined);
    throw error;
  }
}
