// Preloaded into the benchmarked operator (node --expose-gc --require …): a
// SIGUSR2 runs a full garbage collection, so the resident memory the bench
// reads next is what the operator retains, not garbage not yet collected;
// the process's own memory breakdown goes to its log for the curious.
process.on('SIGUSR2', () => {
  globalThis.gc?.();
  const m = process.memoryUsage();
  const mib = (n) => `${(n / 2 ** 20).toFixed(1)} MiB`;
  process.stderr.write(
    `bench: rss ${mib(m.rss)} heapUsed ${mib(m.heapUsed)} heapTotal ${mib(m.heapTotal)} external ${mib(m.external)} arrayBuffers ${mib(m.arrayBuffers)}\n`,
  );
});
