import { describe, expect, it } from '@jest/globals';
import { TRUNCATE_HEADER } from '../contracts.js';
import { truncate, upsert } from '../../test/sink-records.js';
import { TruncateBarrier, withoutRepeatedTruncates, type BarrierMessage } from './truncate-barrier.js';

// The target loop's truncate barrier, on messages as the consumer hands
// them over: a truncate's copies (one per partition) go on together once
// every partition's arrived, and what a partition brings after its copy
// waits until then, whatever the order the partitions are read in.

type Msg = BarrierMessage & { name: string };

const row = (partition: number, offset: number, name: string, topic = 't'): Msg => ({
  topic,
  partition,
  offset: BigInt(offset),
  headers: new Map(),
  name,
});

const copy = (partition: number, offset: number, id: string, partitions: number, topic = 't'): Msg => ({
  topic,
  partition,
  offset: BigInt(offset),
  headers: new Map([[Buffer.from(TRUNCATE_HEADER), Buffer.from(JSON.stringify({ id, partitions }))]]),
  name: `T${id}@${partition}`,
});

const names = (out: Msg[]) => out.map((m) => m.name);

describe('TruncateBarrier', () => {
  it('holds each partition at its copy until every copy arrived, then lets the copies through together', () => {
    const b = new TruncateBarrier<Msg>();
    const seen: Msg[] = [];
    const admit = (m: Msg) => seen.push(...b.admit(m));
    // Partition 0 is read whole (before, truncate, after) before partition 1's backlog.
    admit(row(0, 0, 'a0'));
    admit(copy(0, 1, '1', 2));
    admit(row(0, 2, 'c0'));
    admit(row(0, 3, 'd0'));
    expect(names(seen)).toEqual(['a0']);
    expect(b.waiting).toBe(true);
    admit(row(1, 0, 'a1'));
    admit(row(1, 1, 'b1'));
    admit(copy(1, 2, '1', 2));
    expect(names(seen)).toEqual(['a0', 'a1', 'b1', 'T1@0', 'T1@1', 'c0', 'd0']);
    expect(b.waiting).toBe(false);
    admit(row(1, 3, 'c1'));
    expect(names(seen).at(-1)).toBe('c1');
  });

  it('applies two truncates in a row in order, the second held in a partition released by the first', () => {
    const b = new TruncateBarrier<Msg>();
    const seen: Msg[] = [];
    const admit = (m: Msg) => seen.push(...b.admit(m));
    admit(copy(0, 0, '1', 2));
    admit(row(0, 1, 'x0'));
    admit(copy(0, 2, '2', 2));
    admit(row(0, 3, 'y0'));
    admit(copy(1, 0, '1', 2));
    expect(names(seen)).toEqual(['T1@0', 'T1@1', 'x0']);
    admit(row(1, 1, 'x1'));
    admit(copy(1, 2, '2', 2));
    expect(names(seen)).toEqual(['T1@0', 'T1@1', 'x0', 'x1', 'T2@0', 'T2@1', 'y0']);
  });

  it('keeps topics apart, and drops what a partition reads again after a rejoin (already held)', () => {
    const b = new TruncateBarrier<Msg>();
    const seen: Msg[] = [];
    const admit = (m: Msg) => seen.push(...b.admit(m));
    admit(copy(0, 5, '1', 2, 'a'));
    admit(row(0, 6, 'a-after', 'a'));
    admit(row(0, 0, 'b-other-topic', 'b'));
    // Read again from before the copy: already passed on, or held.
    admit(row(0, 4, 'a-again', 'a'));
    admit(copy(0, 5, '1', 2, 'a'));
    admit(row(0, 6, 'a-after-again', 'a'));
    expect(names(seen)).toEqual(['b-other-topic']);
    admit(copy(1, 9, '1', 2, 'a'));
    expect(names(seen)).toEqual(['b-other-topic', 'T1@0', 'T1@1', 'a-after']);
  });

  it('waits for the partitions the consumer reads: a replica with a share of them', () => {
    let mine: number[] | null = [1, 3];
    const b = new TruncateBarrier<Msg>(() => mine);
    expect(b.partial('t', 4)).toBe(true);
    expect(names(b.admit(copy(1, 0, '1', 4)))).toEqual([]);
    expect(names(b.admit(copy(3, 0, '1', 4)))).toEqual(['T1@1', 'T1@3']);
    // No assignment (a rejoin in progress) counts as unknown: every partition is awaited.
    mine = [];
    expect(b.partial('t', 4)).toBe(false);
    expect(names(b.admit(copy(1, 1, '2', 4)))).toEqual([]);
    // The group gives this consumer partition 1 alone: the barrier goes on.
    mine = [1];
    expect(names(b.reassess())).toEqual(['T2@1']);
    // A partition the topic gained after the publisher counted them has no copy to wait for.
    mine = [0, 1, 2, 3, 4];
    expect(names(b.admit(copy(0, 2, '3', 4)))).toEqual([]);
    expect(names([1, 2, 3].flatMap((p) => b.admit(copy(p, 3, '3', 4))))).toEqual([
      'T3@0',
      'T3@1',
      'T3@2',
      'T3@3',
    ]);
  });

  it('passes messages with other headers on at once', () => {
    const b = new TruncateBarrier<Msg>();
    const m = {
      ...row(0, 0, 'h'),
      headers: new Map([[Buffer.from(TRUNCATE_HEADER), Buffer.from('not json')]]),
    };
    expect(names(b.admit(m))).toEqual(['h']);
  });
});

describe('withoutRepeatedTruncates', () => {
  it('keeps one truncate of a table per run of copies with nothing written between', () => {
    const batch = [
      upsert('a', { id: 1 }),
      truncate('a'),
      truncate('b'),
      truncate('a'),
      truncate('b'),
      upsert('a', { id: 2 }),
      truncate('a'),
      truncate('b'),
    ];
    expect(withoutRepeatedTruncates(batch)).toEqual([
      upsert('a', { id: 1 }),
      truncate('a'),
      truncate('b'),
      upsert('a', { id: 2 }),
      truncate('a'),
    ]);
  });
});
