// Quantiles from cumulative histogram buckets, as PromQL's
// histogram_quantile does: find the bucket where the rank falls and
// interpolate linearly inside it (the lowest bucket from 0; a rank in the
// +Inf bucket answers the highest finite bound).

export interface Bucket {
  /** Upper bound (`le`), Infinity for +Inf. */
  le: number;
  /** Cumulative count of observations ≤ le. */
  count: number;
}

/** The q-quantile (0 ≤ q ≤ 1) of the buckets; undefined without observations. */
export function histogramQuantile(q: number, buckets: readonly Bucket[]): number | undefined {
  const sorted = [...buckets].sort((a, b) => a.le - b.le);
  const total = sorted.at(-1)?.count ?? 0;
  if (total <= 0 || sorted.at(-1)?.le !== Infinity) return undefined;
  const rank = Math.min(Math.max(q, 0), 1) * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const b of sorted) {
    if (b.count >= rank && b.count > prevCount) {
      if (b.le === Infinity) return prevLe;
      return prevLe + (b.le - prevLe) * ((rank - prevCount) / (b.count - prevCount));
    }
    if (b.le !== Infinity) prevLe = b.le;
    prevCount = b.count;
  }
  return prevLe;
}

/** Adds bucket lists of one histogram family (the same bounds) from several series. */
export function mergeBuckets(lists: readonly (readonly Bucket[])[]): Bucket[] {
  const byLe = new Map<number, number>();
  for (const list of lists) for (const b of list) byLe.set(b.le, (byLe.get(b.le) ?? 0) + b.count);
  return [...byLe].map(([le, count]) => ({ le, count })).sort((a, b) => a.le - b.le);
}
