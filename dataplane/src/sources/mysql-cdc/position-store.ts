import { Admin, Consumer, ListOffsetTimestamps, type Producer } from '@platformatic/kafka';
import { clientOptions, type KafkaConnection } from '../../systems/kafka/connection.js';
import { byLeader, fetchFromLeaders } from '../../systems/kafka/fetch.js';
import { positionOf, type BinlogPosition } from './position.js';
import { packTables, unpackTables, type RecordedPosition } from './recorded-tables.js';

// Where a MySQL or MariaDB capture keeps its position: a binary log has no
// replication slot to remember a reader, so the position is a record of a
// compacted topic of the platform broker, `sluice-position.<connector id>`
// (one partition, the connector id as key), as Kafka Connect keeps its
// source offsets. The record is written after the broker acknowledged the
// events it covers (the same producer, acks=all), so what it names was
// delivered; a restart reads the newest record and resumes there.

export const positionTopic = (connectorId: string) => `sluice-position.${connectorId}`;

interface PositionRecord extends BinlogPosition {
  /** The time it was written, ms since the epoch. */
  written_ms: number;
  /** The captured tables' definitions at the position (recorded-tables.ts). */
  tables?: unknown;
}

/** A position as its record's value holds it. */
export function positionRecordText(p: RecordedPosition): string {
  const record: PositionRecord = {
    file: p.file,
    offset: p.offset,
    gtid: p.gtid,
    written_ms: Date.now(),
    ...(p.tables ? { tables: packTables(p.tables) } : {}),
  };
  return JSON.stringify(record);
}

/** What `positionRecordText` wrote, read back. */
export function positionOfRecord(text: string): RecordedPosition {
  const record = JSON.parse(text) as PositionRecord;
  const tables = unpackTables(record.tables);
  return { file: record.file, offset: record.offset, gtid: record.gtid, ...(tables ? { tables } : {}) };
}

export interface PositionStore {
  /** The newest recorded position, or null when the capture never completed its snapshot. */
  read(): Promise<RecordedPosition | null>;
  /** Records `p` (resolves once the broker acknowledged it). */
  write(p: RecordedPosition): Promise<void>;
}

export async function positionStore(
  connection: KafkaConnection,
  connectorId: string,
  producer: Producer<string, string, string, string>,
): Promise<PositionStore> {
  const topic = positionTopic(connectorId);
  const admin = new Admin(clientOptions(connection, `sluice-${connectorId}-admin`));
  try {
    const existing = await admin.listTopics();
    if (!existing.includes(topic)) {
      await admin
        .createTopics({
          topics: [topic],
          partitions: 1,
          replicas: -1,
          configs: [{ name: 'cleanup.policy', value: 'compact' }],
        })
        .catch(async (e: unknown) => {
          // Another start created it meanwhile.
          if (!(await admin.listTopics()).includes(topic)) throw e;
        });
    }
  } finally {
    await admin.close().catch(() => undefined);
  }
  return {
    read: () => readNewest(connection, connectorId, topic),
    write: async (p) => {
      await producer.send({ messages: [{ topic, key: connectorId, value: positionRecordText(p) }] });
    },
  };
}

/** The newest position recorded for the connector, read without making its topic; null when there is none. */
export async function readRecordedPosition(
  connection: KafkaConnection,
  connectorId: string,
): Promise<BinlogPosition | null> {
  const topic = positionTopic(connectorId);
  const admin = new Admin(clientOptions(connection, `sluice-${connectorId}-admin`));
  try {
    // A connector never started (or deleted meanwhile) has no topic: nothing recorded.
    if (!(await admin.listTopics()).includes(topic)) return null;
  } finally {
    await admin.close().catch(() => undefined);
  }
  const recorded = await readNewest(connection, connectorId, topic);
  return recorded && positionOf(recorded);
}

/**
 * Deletes the connector's position topic (its connector is deleted: nothing
 * resumes from it); resolves false when there was none, so deleting again is
 * harmless.
 */
export async function deletePositionTopic(
  connection: KafkaConnection,
  connectorId: string,
): Promise<boolean> {
  const topic = positionTopic(connectorId);
  const admin = new Admin(clientOptions(connection, `sluice-${connectorId}-admin`));
  try {
    if (!(await admin.listTopics()).includes(topic)) return false;
    await admin.deleteTopics({ topics: [topic] }).catch(async (e: unknown) => {
      // Another gateway replica deleted it meanwhile.
      if ((await admin.listTopics()).includes(topic)) throw e;
    });
    return true;
  } finally {
    await admin.close().catch(() => undefined);
  }
}

async function readNewest(
  connection: KafkaConnection,
  connectorId: string,
  topic: string,
): Promise<RecordedPosition | null> {
  const client = new Consumer<Buffer, Buffer, Buffer, Buffer>({
    ...clientOptions(connection, `sluice-${connectorId}-position`),
    groupId: `sluice-${connectorId}-position`,
  });
  try {
    const meta = await client.metadata({ topics: [topic], autocreateTopics: false, forceUpdate: true });
    const info = meta.topics.get(topic);
    if (!info) return null;
    const [ends, starts] = await Promise.all([
      client.listOffsets({ topics: [topic] }),
      client.listOffsets({ topics: [topic], timestamp: ListOffsetTimestamps.EARLIEST }),
    ]);
    const end = ends.get(topic)?.[0] ?? 0n;
    const start = starts.get(topic)?.[0] ?? 0n;
    if (end <= start) return null;
    // The newest record; a batch may hold a few before it (compaction keeps the last per key).
    const from = end - 1n;
    const fetched = await fetchFromLeaders(
      client,
      info.id,
      byLeader(info.partitions, [{ partition: 0, fetchOffset: from }]),
      1 << 20,
    );
    let newest: RecordedPosition | null = null;
    for (const p of fetched) {
      for (const batch of p.batches) {
        for (const r of batch.records) {
          if (!r.value) continue;
          newest = positionOfRecord(r.value.toString('utf8'));
        }
      }
    }
    return newest;
  } finally {
    await client.close(true).catch(() => undefined);
  }
}
