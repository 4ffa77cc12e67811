// A worker of several instances (a target scaled out) has one log per
// instance; its log as users read it is all of them together. Worker lines
// are JSON objects with an ISO-8601 `time` and the `instance` that wrote them
// (dataplane/src/main.ts), so tails merge by time and every line says whose
// it is.

/** The `time` of a worker line, or undefined for a line that is not one of the worker's JSON lines. */
function timeOf(line: string): string | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const time = (JSON.parse(line) as { time?: unknown }).time;
    return typeof time === 'string' ? time : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The last `tail` lines of several instances' tails, oldest first, ordered by
 * their `time`. A line without one (a runtime's own message, a crash trace)
 * keeps its place after the line before it in its instance's log.
 */
export function mergeTails(tails: readonly (readonly string[])[], tail: number): string[] {
  const keyed: { time: string; instance: number; index: number; line: string }[] = [];
  tails.forEach((lines, instance) => {
    let time = '';
    lines.forEach((line, index) => {
      time = timeOf(line) ?? time;
      keyed.push({ time, instance, index, line });
    });
  });
  keyed.sort((a, b) =>
    a.time < b.time ? -1 : a.time > b.time ? 1 : a.instance - b.instance || a.index - b.index,
  );
  return tail <= 0 ? [] : keyed.slice(-tail).map((k) => k.line);
}

/** Every line of several live logs, as each arrives, until all have ended. */
export async function* interleave(sources: readonly AsyncIterable<string>[]): AsyncGenerator<string> {
  const iterators = sources.map((s) => s[Symbol.asyncIterator]());
  const pending = new Map<number, Promise<{ i: number; r: IteratorResult<string> }>>();
  const pull = (i: number) =>
    pending.set(
      i,
      iterators[i]!.next().then((r) => ({ i, r })),
    );
  iterators.forEach((_, i) => pull(i));
  try {
    while (pending.size > 0) {
      const { i, r } = await Promise.race(pending.values());
      if (r.done) {
        pending.delete(i);
        continue;
      }
      pull(i);
      yield r.value;
    }
  } finally {
    // Not awaited: a follow still waiting for its next line ends when its signal aborts.
    for (const it of iterators) void it.return?.();
  }
}

/**
 * A worker's log from its instances' logs: one instance's as it is; several
 * instances' merged: the merged tails of a non-following read, or, when
 * following, each instance's lines as they arrive (the tails first, in the
 * order the instances deliver them).
 */
export async function* instancesLog(
  read: (instance: number, options: { tail?: number; follow?: boolean }) => AsyncIterable<string>,
  instances: number,
  options: { tail?: number; follow?: boolean },
): AsyncGenerator<string> {
  // One instance (or none): its log as it is.
  if (instances <= 1) {
    if (instances === 1) yield* read(0, options);
    return;
  }
  const indexes = [...Array(instances).keys()];
  if (options.follow) {
    yield* interleave(indexes.map((i) => read(i, options)));
    return;
  }
  const tails = await Promise.all(
    indexes.map(async (i) => {
      const lines: string[] = [];
      for await (const line of read(i, options)) lines.push(line);
      return lines;
    }),
  );
  yield* mergeTails(tails, options.tail ?? Number.MAX_SAFE_INTEGER);
}
