import pg from 'pg';
import type { OutboundPolicy } from '@sluice/shared/net';
import {
  connectClient,
  pgConfig,
  pgWhere,
  quoteIdent,
  quoteLiteral,
  type PostgresSettings,
} from '../../systems/postgres/connection.js';
import { describePgFailure } from '../../systems/postgres/errors.js';
import { PostgresCdcError, type PostgresCdcOptions } from './contract.js';
import { qualifiedEntry } from './tables.js';

// What the capture sets up on the source server and finds there again: its
// connections, the publication (with the comment that records who created it
// and whether the initial snapshot completed) and the replication slot.

export const SLOT_PATTERN = /^[a-z0-9_]{1,63}$/;
/** The publication comment Sluice keeps: who created it, and whether the initial snapshot completed. */
export const MARK_CREATED = 'sluice: created for the connector';
export const MARK_SNAPSHOT_DONE = 'initial snapshot complete';

/** Opens a session to the source: a replication one (`replication: database`) or a plain one. */
export type Connect = (replication: boolean) => Promise<pg.Client>;

export function connector(settings: PostgresSettings, policy: OutboundPolicy | undefined): Connect {
  return (replication) =>
    connectClient(
      settings,
      (tls, tunnel) => {
        const config = pgConfig(settings, {
          ...(policy ? { policy } : {}),
          applicationName: 'sluice-postgres-cdc',
          ...(tls === undefined ? {} : { tls }),
          ...(tunnel ? { tunnel } : {}),
        });
        // `replication` is a startup parameter node-postgres passes on (its types omit it).
        const client = new pg.Client(
          replication ? ({ ...config, replication: 'database' } as pg.ClientConfig) : config,
        );
        // A lost connection (the server, or the SSH bastion, gone) fails the
        // query or the stream in progress, which says it in the capture's
        // error; unlistened, the client's own 'error' event would end the
        // worker as an uncaught exception instead.
        client.on('error', () => undefined);
        return client;
      },
      policy ? { policy } : {},
    ).catch((error: unknown) => {
      throw new PostgresCdcError(describePgFailure(error, pgWhere(settings)));
    });
}

export interface PublicationState {
  /** Sluice may record the snapshot's completion on it (it owns it). */
  owned: boolean;
  comment: string | null;
}

export async function ensurePublication(
  client: pg.Client,
  name: string,
  tables: readonly { schema: string; table: string }[],
  log: PostgresCdcOptions['log'],
): Promise<PublicationState> {
  for (const t of tables) {
    const { rows } = await client.query<{ ok: boolean }>('select to_regclass($1) is not null as ok', [
      qualifiedEntry(t),
    ]);
    if (!rows[0]?.ok)
      throw new PostgresCdcError(`Table ${t.schema}.${t.table} does not exist in the source database`);
  }
  const list = tables.map(qualifiedEntry).join(', ');
  const { rows } = await client.query<{ owned: boolean; comment: string | null }>(
    `select pubowner = (select oid from pg_roles where rolname = current_user) as owned,
            obj_description(oid, 'pg_publication') as comment
       from pg_publication where pubname = $1`,
    [name],
  );
  const existing = rows[0];
  if (!existing) {
    await client.query(`create publication ${quoteIdent(name)} for table ${list}`);
    await client.query(`comment on publication ${quoteIdent(name)} is ${quoteLiteral(MARK_CREATED)}`);
    return { owned: true, comment: MARK_CREATED };
  }
  const published = await client.query<{ schemaname: string; tablename: string }>(
    'select schemaname::text, tablename::text from pg_publication_tables where pubname = $1',
    [name],
  );
  const have = new Set(published.rows.map((r) => `${r.schemaname}\0${r.tablename}`));
  const differs = tables.length !== have.size || tables.some((t) => !have.has(`${t.schema}\0${t.table}`));
  if (differs && existing.owned) {
    // The whitelist changed: tables added now are streamed from here on (a backfill re-reads them).
    await client.query(`alter publication ${quoteIdent(name)} set table ${list}`);
  } else if (differs) {
    log?.('warn', `publication ${name} is not Sluice's and does not publish exactly the whitelisted tables`);
  }
  return { owned: existing.owned, comment: existing.comment };
}

/** Records on a publication Sluice created that the initial snapshot completed (a restart then streams on). */
export async function recordSnapshotDone(client: pg.Client, publication: string): Promise<void> {
  await client.query(
    `comment on publication ${quoteIdent(publication)} is ${quoteLiteral(`${MARK_CREATED}; ${MARK_SNAPSHOT_DONE}`)}`,
  );
}

/**
 * Waits (a few seconds at most) for the session that held the slot to end: a
 * worker restarted at once finds its predecessor's session still closing.
 * A slot still held after that is in use by another worker.
 */
export async function waitForSlotRelease(client: pg.Client, slot: string): Promise<void> {
  for (let i = 0; i < 40; i++) {
    const { rows } = await client.query<{ active: boolean }>(
      'select active from pg_replication_slots where slot_name = $1',
      [slot],
    );
    if (!rows[0]?.active) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new PostgresCdcError(
    `Replication slot ${slot} is in use by another process (another worker of the connector?)`,
  );
}
