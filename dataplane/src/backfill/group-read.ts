import type { Consumer } from '@platformatic/kafka';
import { partitionCount } from '../systems/kafka/topic-partitions.js';

// Whether a subscription's consumer group has read its change stream
// (docs/data-plane.md "Backfills", `backfill` turned on later). A target
// worker's group without committed offsets starts at the earliest retained
// offset once `backfill` is on, so it reads the stream's past by itself; a
// group with offsets resumes from them, past that beginning.

type Client = Consumer<Buffer, Buffer, Buffer, Buffer>;

/**
 * True when the client's group (its `groupId`) has a committed offset on any
 * partition of `topic`. A topic that does not exist has none. Asks the group's
 * coordinator (OffsetFetch) without joining the group, so the live consumer is
 * not disturbed.
 */
export async function groupHasReadTopic(client: Client, topic: string): Promise<boolean> {
  const partitions = (await partitionCount(client, topic)) ?? 0;
  if (partitions === 0) return false;
  const committed = await client.listCommittedOffsets({
    topics: [{ topic, partitions: Array.from({ length: partitions }, (_, i) => i) }],
  });
  // The broker answers -1 for a partition without a committed offset.
  return (committed.get(topic) ?? []).some((offset) => offset >= 0n);
}
