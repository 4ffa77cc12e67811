/**
 * The last N log lines of a worker, with followers: `read({ tail, follow })`
 * yields the tail, then every new line until the signal aborts. Bounded, so
 * a chatty worker cannot grow the operator's memory.
 */
export class LogRing {
  private readonly lines: string[] = [];
  private readonly waiters = new Set<() => void>();
  private total = 0;

  constructor(private readonly capacity: number) {}

  push(line: string): void {
    this.lines.push(line);
    if (this.lines.length > this.capacity) this.lines.shift();
    this.total++;
    for (const wake of this.waiters) wake();
  }

  tail(n: number): string[] {
    return n <= 0 ? [] : this.lines.slice(-n);
  }

  async *read(options: { tail?: number; follow?: boolean; signal?: AbortSignal }): AsyncIterable<string> {
    const first = this.tail(options.tail ?? this.capacity);
    yield* first;
    if (!options.follow) return;
    let seen = this.total;
    const signal = options.signal;
    while (!signal?.aborted) {
      if (this.total === seen) {
        await new Promise<void>((resolve) => {
          const wake = () => {
            this.waiters.delete(wake);
            signal?.removeEventListener('abort', wake);
            resolve();
          };
          this.waiters.add(wake);
          signal?.addEventListener('abort', wake, { once: true });
        });
        continue;
      }
      // Lines pushed since `seen`, as far as the ring still holds them.
      const fresh = Math.min(this.total - seen, this.lines.length);
      seen = this.total;
      yield* this.lines.slice(-fresh);
    }
  }
}
