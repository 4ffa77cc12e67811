import { TRUNCATE_HEADER, type SinkRecord } from '../contracts.js';

// A truncate of a source table is published once to every partition of the
// data model's topic (sources/change-publisher.ts), among the row events of
// each partition. Applied at its first copy, rows of another partition not
// read yet from before the truncate would survive it; applied at every copy,
// it would remove rows already written from after it. So each partition is
// held at its copy (the messages after it kept back) until the copies of
// every partition this consumer reads have arrived; then the copies go on
// together, adjacent — the table emptied once, since nothing comes between
// them — and after them what each partition held, in its order. What comes
// before a copy in any partition is written before the truncate, what comes
// after it after: the order of the source.

/** What the barrier needs of a consumed message. */
export interface BarrierMessage {
  topic: string;
  partition: number;
  offset: bigint;
  headers: Map<Buffer, Buffer>;
}

interface Barrier {
  /** Copies that arrived, by partition. */
  copies: Map<number, BarrierMessage>;
  /** Partitions of the topic (the publisher's count). */
  partitions: number;
}

interface Held {
  barrier: string;
  messages: BarrierMessage[];
  /** The highest offset seen: a message read again (after a group rejoin) is already here. */
  last: bigint;
}

/** The truncate header of a message (a copy of a truncate event), or null. */
export function truncateCopy(
  msg: Pick<BarrierMessage, 'headers'>,
): { id: string; partitions: number } | null {
  if (msg.headers.size === 0) return null;
  for (const [name, value] of msg.headers) {
    if (name.toString('utf8') !== TRUNCATE_HEADER) continue;
    try {
      const h = JSON.parse(value.toString('utf8')) as { id?: unknown; partitions?: unknown };
      if (typeof h.id === 'string' && typeof h.partitions === 'number')
        return { id: h.id, partitions: h.partitions };
    } catch {
      // Not ours: an ordinary message.
    }
  }
  return null;
}

export class TruncateBarrier<M extends BarrierMessage> {
  private readonly open = new Map<string, Barrier>();
  private readonly held = new Map<string, Held>();

  /**
   * @param assigned the partitions of `topic` this consumer reads now, or
   * null when unknown (then: all of them). A target of several replicas reads
   * a share: its barrier waits for the copies of its share only.
   */
  constructor(private readonly assigned: (topic: string) => readonly number[] | null = () => null) {}

  /** True while a truncate waits for copies. */
  get waiting(): boolean {
    return this.open.size > 0;
  }

  /** True while a partition is held: every message must go through `admit`. */
  get holding(): boolean {
    return this.held.size > 0;
  }

  /** Partitions of the consumer that fewer than the topic has: the barrier then spans only these (logged by the caller). */
  partial(topic: string, partitions: number): boolean {
    const mine = this.mine(topic);
    return mine !== null && mine.length < partitions;
  }

  /** The consumer's partitions of `topic`; none (a group rejoin in progress) counts as unknown. */
  private mine(topic: string): readonly number[] | null {
    const mine = this.assigned(topic);
    return mine && mine.length > 0 ? mine : null;
  }

  /** Takes a consumed message; returns the messages that may go on now, in order. */
  admit(msg: M): M[] {
    const partitionKey = `${msg.topic}\0${msg.partition}`;
    const held = this.held.get(partitionKey);
    if (held) {
      if (msg.offset > held.last) {
        held.messages.push(msg);
        held.last = msg.offset;
      }
      return [];
    }
    const copy = truncateCopy(msg);
    if (!copy) return [msg];
    const barrierKey = `${msg.topic}\0${copy.id}`;
    let barrier = this.open.get(barrierKey);
    if (!barrier) {
      barrier = { copies: new Map(), partitions: copy.partitions };
      this.open.set(barrierKey, barrier);
    }
    barrier.copies.set(msg.partition, msg);
    this.held.set(partitionKey, { barrier: barrierKey, messages: [], last: msg.offset });
    return this.releaseIfComplete(msg.topic, barrierKey);
  }

  /** Releases a barrier whose copies all arrived (also after the assignment shrank). */
  private releaseIfComplete(topic: string, barrierKey: string): M[] {
    const barrier = this.open.get(barrierKey) as Barrier;
    // Partitions added to the topic after the publisher counted them got no copy: not awaited.
    const all = Array.from({ length: barrier.partitions }, (_, p) => p);
    const mine = this.mine(topic);
    const waiting = mine ? mine.filter((p) => p < barrier.partitions) : all;
    if (waiting.some((p) => !barrier.copies.has(p))) return [];
    this.open.delete(barrierKey);
    const out = [...barrier.copies.values()] as M[];
    const after: BarrierMessage[] = [];
    for (const p of barrier.copies.keys()) {
      const key = `${topic}\0${p}`;
      after.push(...(this.held.get(key)?.messages ?? []));
      this.held.delete(key);
    }
    // What a partition held may hold the next truncate's copy: admitted again, in order.
    for (const m of after) out.push(...this.admit(m as M));
    return out;
  }

  /** After a change of the consumer's partitions: the barriers it no longer waits for go on. */
  reassess(): M[] {
    const out: M[] = [];
    for (const key of [...this.open.keys()])
      out.push(...this.releaseIfComplete(key.split('\0')[0] as string, key));
    return out;
  }
}

/**
 * The batch without a truncate that repeats the one just before it (the
 * copies a barrier lets through together): a sink that passes truncates on
 * sends one.
 */
export function withoutRepeatedTruncates(batch: readonly SinkRecord[]): SinkRecord[] {
  // Tables truncated with nothing written to them since.
  const emptied = new Set<string>();
  return batch.filter((r) => {
    if (r.op !== 'truncate') {
      emptied.delete(r.table);
      return true;
    }
    if (emptied.has(r.table)) return false;
    emptied.add(r.table);
    return true;
  });
}
