// A parser of the Prometheus text exposition format (0.0.4), enough for the
// workers' /metrics: samples with their labels; comments (HELP, TYPE) and
// timestamps are skipped. Pure, so the collector's arithmetic is testable
// without a worker.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*/;

function parseValue(text: string): number {
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === 'NaN') return NaN;
  const v = Number(text);
  if (text === '' || Number.isNaN(v)) throw new Error(`not a sample value: ${text.slice(0, 40)}`);
  return v;
}

/** Reads `{a="x",b="y"}` from `line` at `start` (the `{`); returns the labels and the index after `}`. */
function parseLabels(line: string, start: number): { labels: Record<string, string>; end: number } {
  const labels: Record<string, string> = {};
  let i = start + 1;
  for (;;) {
    while (line[i] === ' ' || line[i] === ',') i++;
    if (line[i] === '}') return { labels, end: i + 1 };
    const name = LABEL_NAME.exec(line.slice(i))?.[0];
    if (!name) throw new Error('bad label name');
    i += name.length;
    while (line[i] === ' ') i++;
    if (line[i] !== '=' || line[i + 1] !== '"') throw new Error(`label ${name} has no quoted value`);
    i += 2;
    let value = '';
    for (;;) {
      const c = line[i];
      if (c === undefined) throw new Error(`label ${name} is not terminated`);
      i++;
      if (c === '"') break;
      if (c === '\\') {
        const n = line[i++];
        value += n === 'n' ? '\n' : (n ?? '');
      } else value += c;
    }
    labels[name] = value;
  }
}

/** Every sample of the text; a malformed line throws with its line number. */
export function parsePrometheusText(text: string): Sample[] {
  const samples: Sample[] = [];
  const lines = text.split('\n');
  lines.forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    try {
      const name = NAME.exec(line)?.[0];
      if (!name) throw new Error('no metric name');
      let i = name.length;
      let labels: Record<string, string> = {};
      if (line[i] === '{') ({ labels, end: i } = parseLabels(line, i));
      const [value = ''] = line.slice(i).trim().split(/\s+/);
      samples.push({ name, labels, value: parseValue(value) });
    } catch (e) {
      throw new Error(`metrics line ${index + 1}: ${(e as Error).message}`, { cause: e });
    }
  });
  return samples;
}
