// Small helpers the pipeline and Kafka client benches share: options, medians
// and a Markdown table that pastes into bench/README.md.

const args = process.argv.slice(2);

/** `--name value` from the command line, else `fallback`. */
export const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at === -1 ? fallback : args[at + 1];
};

/** The middle value, or the mean of the two middle ones; NaN when empty. */
export const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length === 0 ? NaN : sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

export const table = (header, rows) =>
  [header, header.map(() => '---'), ...rows].map((cells) => `| ${cells.join(' | ')} |`).join('\n');

export const thousands = (n) => Math.round(n).toLocaleString('en');
