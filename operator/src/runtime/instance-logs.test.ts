import { describe, expect, it } from '@jest/globals';
import { instancesLog, interleave, mergeTails } from './instance-logs.js';

const line = (time: string, instance: string, msg: string) =>
  JSON.stringify({ time, level: 'info', worker: 'ns/t', instance, msg });

async function collect(lines: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const l of lines) out.push(l);
  return out;
}

async function* slow(lines: string[], ms: number): AsyncGenerator<string> {
  for (const l of lines) {
    await new Promise((r) => setTimeout(r, ms));
    yield l;
  }
}

describe('instance logs', () => {
  it('merges the tails of several instances by time and keeps the last lines', () => {
    const a = [line('2026-01-01T00:00:01.000Z', 'a', '1'), line('2026-01-01T00:00:03.000Z', 'a', '3')];
    const b = [line('2026-01-01T00:00:02.000Z', 'b', '2'), line('2026-01-01T00:00:04.000Z', 'b', '4')];
    const merged = mergeTails([a, b], 10).map((l) => JSON.parse(l).msg);
    expect(merged).toEqual(['1', '2', '3', '4']);
    expect(mergeTails([a, b], 3).map((l) => JSON.parse(l).msg)).toEqual(['2', '3', '4']);
    expect(mergeTails([a, b], 0)).toEqual([]);
  });

  it('keeps a line without a time (a crash trace) after the line before it in its own log', () => {
    const a = [line('2026-01-01T00:00:01.000Z', 'a', '1'), '    at crash (worker.js:1)'];
    const b = [line('2026-01-01T00:00:02.000Z', 'b', '2')];
    expect(mergeTails([a, b], 10)).toEqual([a[0], a[1], b[0]]);
  });

  it('interleaves live logs as their lines arrive, until every one has ended', async () => {
    const out = await collect(interleave([slow(['a1', 'a2'], 30), slow(['b1', 'b2', 'b3'], 5)]));
    expect([...out].sort()).toEqual(['a1', 'a2', 'b1', 'b2', 'b3']);
    // The faster log is not held back by the slower one.
    expect(out.slice(0, 3)).toEqual(['b1', 'b2', 'b3']);
  });

  it("a non-following read gives the merged tails; a following one every instance's lines", async () => {
    const logs = [
      [line('2026-01-01T00:00:02.000Z', 'a', 'a2'), line('2026-01-01T00:00:04.000Z', 'a', 'a4')],
      [line('2026-01-01T00:00:01.000Z', 'b', 'b1'), line('2026-01-01T00:00:03.000Z', 'b', 'b3')],
    ];
    const read = (i: number, o: { tail?: number }) => slow(logs[i]!.slice(-(o.tail ?? 100)), 1);
    const tail = await collect(instancesLog(read, 2, { tail: 3 }));
    expect(tail.map((l) => JSON.parse(l).msg)).toEqual(['a2', 'b3', 'a4']);
    const followed = await collect(instancesLog(read, 2, { follow: true }));
    expect(followed.map((l) => JSON.parse(l).msg).sort()).toEqual(['a2', 'a4', 'b1', 'b3']);
  });
});
