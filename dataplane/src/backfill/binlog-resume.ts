import { Producer, ProduceAcks, stringSerializers } from '@platformatic/kafka';
import { clientOptions, type KafkaConnection } from '../systems/kafka/connection.js';
import { positionStore } from '../sources/mysql-cdc/position-store.js';
import type { BinlogPosition } from '../sources/mysql-cdc/position.js';
import { currentPosition, holdsPosition } from '../sources/mysql-cdc/server-position.js';
import type { SourceReader } from './source-reader.js';

// How a re-snapshot brings back a MySQL or MariaDB source whose recorded
// binary log position the server purged (its worker stops in `error` on
// it: docs/data-plane-mysql.md). The backfill takes the server's position
// before it reads the first page; once it has re-read every enabled data
// model into every subscribed target, that position becomes the source's
// recorded one, so the restarted worker streams the changes made since the
// re-snapshot began (delivered at least once, as ever). A position the
// server still holds is never moved: the worker resumes from it and loses
// nothing.

/** The server's position now (MySQL, MariaDB); undefined for another source. */
export async function binlogPositionNow(reader: SourceReader): Promise<BinlogPosition | undefined> {
  return reader.binlog ? currentPosition(reader.binlog.conn, reader.binlog.engine) : undefined;
}

/** What became of a source's recorded position after its re-snapshot. */
export type ResumeOutcome =
  /** `from` was recorded: the worker resumes there. */
  | 'recorded'
  /** The server holds the recorded position (or there is none yet): left as it is. */
  | 'kept'
  /** The server no longer holds it, but the re-snapshot did not cover every subscription: left as it is. */
  | 'partial';

/**
 * Records `from` as the source's position when the server no longer holds
 * the recorded one and the re-snapshot `covered` every enabled subscription
 * of the source (otherwise the changes in the gap would be lost for the
 * others). No recorded position: the worker snapshots by itself.
 */
export async function resumeAfterResnapshot(
  platform: KafkaConnection,
  connectorId: string,
  reader: SourceReader,
  from: BinlogPosition,
  covered: boolean,
): Promise<ResumeOutcome> {
  if (!reader.binlog) return 'kept';
  const producer = new Producer({
    ...clientOptions(platform, `sluice-backfill-${connectorId}`),
    idempotent: true,
    acks: ProduceAcks.ALL,
    serializers: stringSerializers,
  });
  try {
    const store = await positionStore(platform, connectorId, producer);
    const recorded = await store.read();
    if (!recorded || (await holdsPosition(reader.binlog.conn, recorded))) return 'kept';
    if (!covered) return 'partial';
    await store.write(from);
    return 'recorded';
  } finally {
    await producer.close().catch(() => undefined);
  }
}
