import type { OutboundPolicy } from '@sluice/shared/net';
import type { ChangeEvent } from '../../contracts.js';
import type { MysqlEngine } from '../../systems/mysql/connection.js';
import type { BinlogPosition } from './position.js';
import type { RecordedPosition } from './recorded-tables.js';

// What the MYSQL_SOURCE / MARIADB_SOURCE capture is given and gives back (capture.ts starts it).

export interface MysqlSourceSettings extends Record<string, unknown> {
  host: string;
  port?: number;
  user: string;
  password?: string;
  database?: string;
  server_id?: number;
  ssl_mode?: string;
  ssl_ca?: string;
}

/** A whitelisted table (`database.table`) and the data model its events belong to. */
export interface MysqlCdcTable {
  entry: string;
  datamodelId: string;
}

export interface MysqlCdcOptions {
  engine: MysqlEngine;
  connectorId: string;
  tables: readonly MysqlCdcTable[];
  /** Takes one event (it may buffer it); nothing is checkpointed before it and `flush` resolved. */
  onEvent: (event: ChangeEvent) => Promise<void>;
  /** Publishes what `onEvent` buffered; resolves once the broker acknowledged it. */
  flush: () => Promise<void>;
  /** The position the last acknowledged events reach, or null before the first snapshot completed. */
  loadPosition: () => Promise<RecordedPosition | null>;
  /** Records a position (with the captured tables' definitions there) once everything before it was acknowledged (called after `flush`). */
  savePosition: (p: RecordedPosition) => Promise<void>;
  policy: OutboundPolicy;
  /** Rows per primary-key chunk of the snapshot; default 2,000. */
  snapshotChunkRows?: number;
  /** Committed transactions published together at most while more input waits; default 200. */
  commitsPerFlush?: number;
  log?: (level: 'info' | 'warn', msg: string, fields?: Record<string, unknown>) => void;
  /** Told each transaction's commit as it is read (metrics). */
  onTransaction?: (commitMs: number) => void;
  /** Told each position checkpointed. */
  onCheckpoint?: (p: BinlogPosition) => void;
}

export interface MysqlCdcCapture {
  /** Settles when the capture stops: resolves after an abort, rejects with the reason of a failure. */
  done: Promise<void>;
  /** Where it reads and where a restart would resume; null while the snapshot runs. */
  positions(): { read: BinlogPosition; needed: BinlogPosition } | null;
}

export class MysqlCdcError extends Error {
  override readonly name = 'MysqlCdcError';
}
