import { ListOffsetTimestamps, type Consumer } from '@platformatic/kafka';
import { byLeader, fetchFromLeaders } from '../systems/kafka/fetch.js';
import { partitionCount } from '../systems/kafka/topic-partitions.js';
import type { ConsumedMessage } from '../target/records.js';

// A backfill's replay of a retained change stream (docs/data-plane.md
// "Backfills"): a fixed offset range per partition — from the earliest
// retained offset to the end offsets taken when the run was triggered — read
// with plain Fetch requests. No consumer group is joined and nothing is
// committed, so the live subscription's group and its offsets are untouched.

type Client = Consumer<Buffer, Buffer, Buffer, Buffer>;

/** Where one partition's replay stands; offsets as decimal text (they are int64, and stored as JSON). */
export interface PartitionRange {
  next: string;
  end: string;
}
/** By partition number. */
export type StreamRange = Record<string, PartitionRange>;

/** The retained range of every partition of `topic` now: earliest → end. */
export async function retainedRange(client: Client, topic: string): Promise<StreamRange> {
  if ((await partitionCount(client, topic)) === undefined) throw new Error(`Topic ${topic} does not exist`);
  const [ends, starts] = await Promise.all([
    client.listOffsets({ topics: [topic] }),
    client.listOffsets({ topics: [topic], timestamp: ListOffsetTimestamps.EARLIEST }),
  ]);
  const end = ends.get(topic) ?? [];
  const start = starts.get(topic) ?? [];
  const range: StreamRange = {};
  end.forEach((e, partition) => {
    range[String(partition)] = { next: String(start[partition] ?? 0n), end: String(e) };
  });
  return range;
}

/** Messages still to replay in `range`. */
export function remainingIn(range: StreamRange): number {
  let n = 0n;
  for (const p of Object.values(range))
    if (BigInt(p.end) > BigInt(p.next)) n += BigInt(p.end) - BigInt(p.next);
  return Number(n);
}

const CONTROL_BATCH = 0x20;

/**
 * Fetches the next messages of `range` (about `maxBytes` and at most
 * `maxMessages` over all partitions), in offset order per partition, and moves `range` past what it
 * returns. Offsets the log no longer has (retention deleted them since the
 * trigger) are skipped to the log's start; they are counted in the result.
 */
export async function fetchRange(
  client: Client,
  topic: string,
  range: StreamRange,
  limits: { maxBytes: number; maxMessages: number },
): Promise<{ messages: ConsumedMessage[]; expired: number }> {
  const meta = await client.metadata({ topics: [topic], autocreateTopics: false });
  const info = meta.topics.get(topic);
  if (!info) throw new Error(`Topic ${topic} does not exist`);
  const { maxBytes, maxMessages } = limits;
  const pending = Object.entries(range).filter(([, p]) => BigInt(p.next) < BigInt(p.end));
  let expired = 0;
  // A partition whose log now starts after `next` lost those messages to retention.
  const starts = (
    await client.listOffsets({ topics: [topic], timestamp: ListOffsetTimestamps.EARLIEST })
  ).get(topic);
  for (const [partition, p] of pending) {
    const start = starts?.[Number(partition)] ?? 0n;
    if (start > BigInt(p.next)) {
      const to = start < BigInt(p.end) ? start : BigInt(p.end);
      expired += Number(to - BigInt(p.next));
      p.next = String(to);
    }
  }
  const wanted = pending
    .filter(([, p]) => BigInt(p.next) < BigInt(p.end))
    .map(([partition, p]) => ({ partition: Number(partition), fetchOffset: BigInt(p.next) }));
  const messages: ConsumedMessage[] = [];
  const fetched = await fetchFromLeaders(client, info.id, byLeader(info.partitions, wanted), maxBytes, 1024);
  for (const p of fetched) {
    const r = range[String(p.partition)];
    if (!r) continue;
    const end = BigInt(r.end);
    let next = BigInt(r.next);
    batches: for (const batch of p.batches) {
      const control = (batch.attributes & CONTROL_BATCH) !== 0;
      for (const rec of batch.records) {
        const offset = batch.firstOffset + BigInt(rec.offsetDelta);
        if (offset < next || offset >= end || control) continue;
        // Bounded batches: the rest of this partition comes with the next fetch.
        if (messages.length >= maxMessages) break batches;
        messages.push({
          topic,
          partition: p.partition,
          offset,
          timestamp: batch.firstTimestamp + rec.timestampDelta,
          key: rec.key ?? undefined,
          value: rec.value ?? undefined,
          headers: new Map(
            rec.headers.filter(([k]) => k !== null).map(([k, v]) => [k as Buffer, v ?? Buffer.alloc(0)]),
          ),
        });
        next = offset + 1n;
      }
      // Past the whole batch, control records and compacted-away offsets included.
      const after = batch.firstOffset + BigInt(batch.lastOffsetDelta) + 1n;
      if (after > next) next = after < end ? after : end;
    }
    r.next = String(next);
  }
  return { messages, expired };
}
