import { describe, expect, it } from '@jest/globals';
import { MetricsRegistry } from '@sluice/shared/metrics';
import { histogramQuantile, mergeBuckets } from './histogram-quantile.js';
import { parsePrometheusText } from './prometheus-text.js';
import { workerFigures } from './worker-figures.js';

describe('parsePrometheusText', () => {
  it('reads samples with labels, escapes, special values and timestamps, skipping comments', () => {
    const text = [
      '# HELP x_total A counter',
      '# TYPE x_total counter',
      'x_total 3',
      'x_total{a="1",b="q\\"uote\\\\d\\nline"} 4.5 1700000000000',
      'y_bucket{le="+Inf"} +Inf',
      'z NaN',
      '',
    ].join('\n');
    const samples = parsePrometheusText(text);
    expect(samples.slice(0, 3)).toEqual([
      { name: 'x_total', labels: {}, value: 3 },
      { name: 'x_total', labels: { a: '1', b: 'q"uote\\d\nline' }, value: 4.5 },
      { name: 'y_bucket', labels: { le: '+Inf' }, value: Infinity },
    ]);
    expect(samples[3]?.value).toBeNaN();
  });

  it('says which line is malformed', () => {
    expect(() => parsePrometheusText('ok 1\nbad{a=1} 2')).toThrow('metrics line 2');
    expect(() => parsePrometheusText('x_total abc')).toThrow('not a sample value');
  });

  it("round-trips the worker's own registry, histogram labels included", () => {
    const r = new MetricsRegistry();
    r.counter('sluice_worker_messages_out_total', 'out').inc({ subscription: 's1' }, 7);
    const h = r.histogram('sluice_worker_end_to_end_latency_seconds', 'lat', [0.1, 1]);
    h.observe(0.05, { subscription: 's1' });
    h.observe(0.5, { subscription: 's1' });
    h.observe(5, { subscription: 's2' });
    const f = workerFigures(parsePrometheusText(r.render()));
    expect(f.confirmed).toEqual({ s1: 7 });
    expect(f.latency.s1).toEqual([
      { le: 0.1, count: 1 },
      { le: 1, count: 2 },
      { le: Infinity, count: 2 },
    ]);
    expect(f.latency.s2?.at(-1)).toEqual({ le: Infinity, count: 1 });
  });
});

describe('histogramQuantile', () => {
  const buckets = [
    { le: 0.1, count: 50 },
    { le: 1, count: 90 },
    { le: 10, count: 100 },
    { le: Infinity, count: 100 },
  ];

  it('interpolates inside the bucket where the rank falls, as PromQL does', () => {
    expect(histogramQuantile(0.5, buckets)).toBeCloseTo(0.1);
    expect(histogramQuantile(0.25, buckets)).toBeCloseTo(0.05);
    expect(histogramQuantile(0.7, buckets)).toBeCloseTo(0.55);
    expect(histogramQuantile(0.95, buckets)).toBeCloseTo(5.5);
  });

  it('answers the highest finite bound for a rank in +Inf, and nothing without observations', () => {
    expect(
      histogramQuantile(0.99, [
        { le: 1, count: 1 },
        { le: Infinity, count: 10 },
      ]),
    ).toBe(1);
    expect(histogramQuantile(0.5, [{ le: Infinity, count: 0 }])).toBeUndefined();
    expect(histogramQuantile(0.5, [])).toBeUndefined();
  });

  it('merges series of the same bounds', () => {
    expect(
      mergeBuckets([
        buckets,
        [
          { le: 0.1, count: 1 },
          { le: Infinity, count: 2 },
        ],
      ]),
    ).toEqual([
      { le: 0.1, count: 51 },
      { le: 1, count: 90 },
      { le: 10, count: 100 },
      { le: Infinity, count: 102 },
    ]);
  });
});
