import type { Consumer } from '@platformatic/kafka';

// Plain Fetch requests for reads that must not join a consumer group or
// commit anything: a backfill's replay of a fixed offset range
// (backfill/stream-range.ts) and the newest messages of a topic for
// pre-flight `fetch-messages` and the preview. One request per partition
// leader; the callers walk the record batches, which may start before the
// offset asked for (a batch is returned whole).

type Client = Consumer<Buffer, Buffer, Buffer, Buffer>;
type FetchResponse = Awaited<ReturnType<Client['fetch']>>;
/** The record batches of one partition, as the broker returned them. */
export type RecordBatches = NonNullable<FetchResponse['responses'][number]['partitions'][number]['records']>;

/** A partition to read and the offset to read it from. */
export interface PartitionFetch {
  partition: number;
  fetchOffset: bigint;
}

/** `wanted` grouped by the leader of each partition (`-1` when the metadata names none). */
export function byLeader(
  partitions: readonly { leader: number }[],
  wanted: readonly PartitionFetch[],
): Map<number, PartitionFetch[]> {
  const out = new Map<number, PartitionFetch[]>();
  for (const w of wanted) {
    const leader = partitions[w.partition]?.leader ?? -1;
    out.set(leader, [...(out.get(leader) ?? []), w]);
  }
  return out;
}

/**
 * One Fetch per leader for the partitions of `leaders`, about `maxBytes` in
 * all (shared out evenly between partitions, at least `minPartitionBytes`
 * each); returns each partition's record batches.
 */
export async function fetchFromLeaders(
  client: Client,
  topicId: string,
  leaders: Map<number, PartitionFetch[]>,
  maxBytes: number,
  minPartitionBytes = 1,
): Promise<{ partition: number; batches: RecordBatches }[]> {
  const out: { partition: number; batches: RecordBatches }[] = [];
  for (const [node, partitions] of leaders) {
    const res = await client.fetch({
      node,
      maxWaitTime: 100,
      maxBytes,
      topics: [
        {
          topicId,
          partitions: partitions.map((p) => ({
            partition: p.partition,
            fetchOffset: p.fetchOffset,
            currentLeaderEpoch: -1,
            lastFetchedEpoch: -1,
            partitionMaxBytes: Math.max(minPartitionBytes, Math.floor(maxBytes / partitions.length)),
          })),
        },
      ],
    });
    for (const t of res.responses) {
      for (const p of t.partitions) out.push({ partition: p.partitionIndex, batches: p.records ?? [] });
    }
  }
  return out;
}
