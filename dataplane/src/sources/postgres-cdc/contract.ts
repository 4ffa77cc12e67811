import type { OutboundPolicy } from '@sluice/shared/net';
import type { ChangeEvent } from '../../contracts.js';
import type { PostgresSettings } from '../../systems/postgres/connection.js';

// What the POSTGRES_SOURCE capture is given and gives back (capture.ts starts it).

export interface PostgresSourceSettings extends PostgresSettings {
  slot_name?: string;
  publication_name?: string;
  plugin_name?: string;
}

/** A whitelisted table (`schema.table`) and the data model its events belong to. */
export interface PostgresCdcTable {
  entry: string;
  datamodelId: string;
}

export interface PostgresCdcOptions {
  connectorId: string;
  tables: readonly PostgresCdcTable[];
  /**
   * Takes one event (it may buffer it); the capture acknowledges nothing
   * before it resolved and `flush` resolved after it.
   */
  onEvent: (event: ChangeEvent) => Promise<void>;
  /** Publishes what `onEvent` buffered; called before every acknowledgement and after each snapshot table. */
  flush?: () => Promise<void>;
  /** Committed transactions acknowledged together at most (default 100), while more input waits. */
  commitsPerFlush?: number;
  policy?: OutboundPolicy;
  /** Rows per FETCH of the snapshot cursor; default 1,000. */
  snapshotFetchRows?: number;
  log?: (level: 'info' | 'warn', msg: string) => void;
  /** Told each LSN acknowledged to the server (metrics: the source's lag). */
  onAcknowledge?: (lsn: string) => void;
}

export interface PostgresCdcCapture {
  /** Settles when the capture stops: resolves after an abort, rejects with the reason of a failure. */
  done: Promise<void>;
  /** The last LSN acknowledged to the server (`X/Y`). */
  acknowledgedLsn(): string;
}

export class PostgresCdcError extends Error {
  override readonly name = 'PostgresCdcError';
}
