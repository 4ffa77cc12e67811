import type { Consumer } from '@platformatic/kafka';
import { fetchRange, retainedRange, type StreamRange } from './stream-range.js';

// Whether a database source's change stream still begins with the source's
// initial snapshot (docs/data-plane.md "Backfills", automatic re-snapshots).
// A new subscription with `backfill` reads its data model's stream from the
// earliest retained offset; that gives it the table's past only when the
// stream still starts with the snapshot the source worker published at its
// first start. It does not when retention removed the beginning, or when the
// data model was added after that first start (its stream begins with the
// changes since), or when the stream does not exist yet although the source
// runs (a table added later without changes since).

type Client = Consumer<Buffer, Buffer, Buffer, Buffer>;

/** How a change stream begins. */
export type StreamStart =
  /** Every partition that holds messages starts at offset 0 with a snapshot read. */
  | 'snapshot'
  /** The topic does not exist. */
  | 'absent'
  /** The topic exists and holds no message. */
  | 'empty'
  /** Retention removed the beginning of a partition. */
  | 'truncated'
  /** A partition begins with a change that is not a snapshot read. */
  | 'changes';

/** A change event's value is a snapshot read (`source.snapshot: true`). */
function isSnapshotRead(value: Buffer | undefined): boolean {
  if (!value) return false;
  try {
    const event = JSON.parse(value.toString('utf8')) as { source?: { snapshot?: unknown } };
    return event.source?.snapshot === true;
  } catch {
    return false;
  }
}

/** Classifies the beginning of `topic` on the platform stream (one message read per partition). */
export async function streamStart(client: Client, topic: string): Promise<StreamStart> {
  let range: StreamRange;
  try {
    range = await retainedRange(client, topic);
  } catch (e) {
    if (e instanceof Error && /does not exist/.test(e.message)) return 'absent';
    throw e;
  }
  const filled = Object.entries(range).filter(([, p]) => BigInt(p.end) > 0n);
  if (filled.length === 0) return 'empty';
  if (filled.some(([, p]) => p.next !== '0')) return 'truncated';
  // The first message of every partition that has one.
  const first: StreamRange = Object.fromEntries(
    filled.map(([partition]) => [partition, { next: '0', end: '1' }]),
  );
  const seen = new Set<number>();
  for (let round = 0; round < 5 && seen.size < filled.length; round++) {
    const { messages } = await fetchRange(client, topic, first, {
      maxBytes: 1024 * 1024,
      maxMessages: filled.length,
    });
    for (const m of messages) {
      if (!isSnapshotRead(m.value)) return 'changes';
      seen.add(m.partition);
    }
  }
  // Offset 0 of a partition held no message (a transaction marker, compacted): not the snapshot's start.
  return seen.size === filled.length ? 'snapshot' : 'changes';
}
