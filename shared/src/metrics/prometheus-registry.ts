// The worker's /metrics in Prometheus text format (0.0.4). A handful of
// counters, gauges and one histogram do not justify a client library; label
// values are escaped as the format asks.

type Labels = Record<string, string>;

const escape = (v: string) => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const labelText = (labels: Labels) => {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escape(v)}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
};

interface Family {
  type: 'counter' | 'gauge' | 'histogram';
  help: string;
  render(name: string): string[];
}

export class Counter {
  readonly #values = new Map<string, { labels: Labels; value: number }>();
  inc(labels: Labels = {}, by = 1): void {
    const id = labelText(labels);
    const cur = this.#values.get(id);
    if (cur) cur.value += by;
    else this.#values.set(id, { labels, value: by });
  }
  set(labels: Labels, value: number): void {
    this.#values.set(labelText(labels), { labels, value });
  }
  /** Forgets every label set (a gauge whose labels name what it measures, when that changes). */
  clear(): void {
    this.#values.clear();
  }
  get(labels: Labels = {}): number {
    return this.#values.get(labelText(labels))?.value ?? 0;
  }
  render(name: string): string[] {
    return [...this.#values.values()].map((v) => `${name}${labelText(v.labels)} ${v.value}`);
  }
}

/** Same text as a counter; `set` is the usual operation. */
export class Gauge extends Counter {}

/** Bucket counts per label set (the collector reads quantiles per subscription). */
export class Histogram {
  readonly #series = new Map<string, { labels: Labels; counts: number[]; sum: number; count: number }>();
  constructor(readonly buckets: readonly number[]) {}
  observe(value: number, labels: Labels = {}): void {
    this.observeAll([value], labels);
  }
  /** Many observations of one label set (its text is built once). */
  observeAll(values: readonly number[], labels: Labels = {}): void {
    const id = labelText(labels);
    let s = this.#series.get(id);
    if (!s) this.#series.set(id, (s = { labels, counts: this.buckets.map(() => 0), sum: 0, count: 0 }));
    for (const value of values) {
      s.sum += value;
      s.count += 1;
      for (let i = 0; i < this.buckets.length; i++)
        if (value <= (this.buckets[i] as number)) s.counts[i]! += 1;
    }
  }
  /** Observations over every label set. */
  get count(): number {
    return [...this.#series.values()].reduce((n, s) => n + s.count, 0);
  }
  render(name: string): string[] {
    return [...this.#series.values()].flatMap((s) => {
      const le = (b: string) => labelText({ ...s.labels, le: b });
      return [
        ...this.buckets.map((b, i) => `${name}_bucket${le(String(b))} ${s.counts[i]}`),
        `${name}_bucket${le('+Inf')} ${s.count}`,
        `${name}_sum${labelText(s.labels)} ${s.sum}`,
        `${name}_count${labelText(s.labels)} ${s.count}`,
      ];
    });
  }
}

export class MetricsRegistry {
  readonly #families = new Map<string, Family>();

  counter(name: string, help: string): Counter {
    const c = new Counter();
    this.#families.set(name, { type: 'counter', help, render: (n) => c.render(n) });
    return c;
  }
  gauge(name: string, help: string): Gauge {
    const g = new Gauge();
    this.#families.set(name, { type: 'gauge', help, render: (n) => g.render(n) });
    return g;
  }
  histogram(name: string, help: string, buckets: readonly number[]): Histogram {
    const h = new Histogram(buckets);
    this.#families.set(name, { type: 'histogram', help, render: (n) => h.render(n) });
    return h;
  }
  render(): string {
    const out: string[] = [];
    for (const [name, f] of this.#families) {
      out.push(`# HELP ${name} ${f.help}`, `# TYPE ${name} ${f.type}`, ...f.render(name));
    }
    return `${out.join('\n')}\n`;
  }
}

/** End-to-end latency buckets, seconds: 5 ms … 5 min. */
export const LATENCY_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
