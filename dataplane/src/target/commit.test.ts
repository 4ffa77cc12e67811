import { describe, expect, it } from '@jest/globals';
import { commit } from './commit.js';

// The target loop's offset commit: a commit the stream leaves unanswered is
// asked for again (the stream strands a commit queued while its consumer
// was not active), and one that never comes counts as failed, not fatal.

const never = () => new Promise<void>(() => undefined);

function messages(answerOn: number | null, fail = false) {
  const calls = { n: 0 };
  const msg = (partition: number) => ({
    topic: 't',
    partition,
    commit: () => {
      calls.n += 1;
      if (fail) return Promise.reject(new Error('NOT_COORDINATOR'));
      return answerOn !== null && calls.n >= answerOn ? Promise.resolve() : never();
    },
  });
  // Two messages of partition 0 (only the last one is committed) and one of partition 1.
  return { batch: [msg(0), msg(0), msg(1)], calls };
}

describe('commit', () => {
  const logged: string[] = [];
  const ctx = {
    log: (_level: string, msg: string, fields?: Record<string, unknown>) =>
      void logged.push(`${msg} ${JSON.stringify(fields)}`),
  };

  it('asks again for a commit left unanswered, and resolves once it is answered', async () => {
    const { batch, calls } = messages(3); // the first asks (one per partition) hang
    expect(await commit(batch, ctx, 5)).toBe(true);
    expect(calls.n).toBe(4); // 2 partitions, asked twice
  });

  it('commits the last message of each partition only, once when answered at once', async () => {
    const { batch, calls } = messages(1);
    expect(await commit(batch, ctx, 5)).toBe(true);
    expect(calls.n).toBe(2);
  });

  it('counts a commit never answered, or refused, as failed with a warning (not fatal)', async () => {
    logged.length = 0;
    expect(await commit(messages(null).batch, ctx, 2)).toBe(false);
    expect(logged).toEqual([expect.stringMatching(/^committing offsets failed .*no answer in/)]);
    logged.length = 0;
    expect(await commit(messages(null, true).batch, ctx, 2)).toBe(false);
    expect(logged).toEqual([expect.stringMatching(/^committing offsets failed .*NOT_COORDINATOR/)]);
  });
});
