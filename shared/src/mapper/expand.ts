// Wildcard expansion (spec 2.10 rules 4-7). Every value reached through `*`
// segments carries the tuple of array indices it was reached by; the values of
// all wildcard sources are laid into one tree keyed by those indices. Each leaf
// of the tree is an output row, and a row takes, from every source, the value
// stored on its path from the root. So:
// - columns under one array, and parallel arrays under different roots, meet
//   in the same nodes: zipped by index, never a cartesian product;
// - a shallower column is repeated on every row below it (one row per deepest
//   element, with its parents' values);
// - an element with nothing deeper (an empty or missing inner array) is still
//   a leaf: it gives one row whose deeper columns are null, so no element and
//   no message disappears;
// - arrays of uneven length give as many rows as the longest; the shorter
//   ones read as missing (null) on the extra rows.
import { isIndexSegment, WILDCARD } from './path.js';
import { isMissing } from './value.js';

export interface ExpansionNode {
  /** Values by source index; undefined where a source has nothing at this node. */
  vals: unknown[] | undefined;
  kids: ExpansionNode[] | undefined;
}

export const newNode = (): ExpansionNode => ({ vals: undefined, kids: undefined });

// Keys inherited from Object.prototype or Array.prototype (`constructor`,
// `length`, `__proto__`...) must only match a message's own properties.
const isInheritedName = (segment: string): boolean =>
  segment in Object.prototype || segment in Array.prototype;

export type Step = (value: object) => unknown;

/** The step of one non-wildcard segment; the caller has checked the value is an object. */
export const compileStep = (segment: string): Step => {
  if (isIndexSegment(segment)) {
    const index = Number(segment);
    return (v) => (Array.isArray(v) ? v[index] : (v as Record<string, unknown>)[segment]);
  }
  if (isInheritedName(segment)) {
    // Arrays own `length`, which is no key of a JSON message either.
    return (v) =>
      !Array.isArray(v) && Object.hasOwn(v, segment) ? (v as Record<string, unknown>)[segment] : undefined;
  }
  return (v) => (v as Record<string, unknown>)[segment];
};

/** A reader for a path without `*`: the value, or undefined when any step is missing. */
export const compileReader = (segments: readonly string[]): ((message: unknown) => unknown) => {
  const steps = segments.map(compileStep);
  const n = steps.length;
  return (message) => {
    let v = message;
    for (let i = 0; i < n; i++) {
      if (typeof v !== 'object' || v === null) return undefined;
      v = (steps[i] as Step)(v);
    }
    return v;
  };
};

/** Steps of a path with `*`; null marks a wildcard. */
export type WildSteps = (Step | null)[];

export const compileWildSteps = (segments: readonly string[]): WildSteps =>
  segments.map((s) => (s === WILDCARD ? null : compileStep(s)));

/** Lays the values of source `src` into the tree under `node`. */
export const walk = (
  steps: WildSteps,
  i: number,
  value: unknown,
  node: ExpansionNode,
  src: number,
  width: number,
): void => {
  let v = value;
  for (; i < steps.length; i++) {
    if (typeof v !== 'object' || v === null) return;
    const step = steps[i];
    if (step === undefined) return;
    if (step !== null) {
      v = step(v);
      continue;
    }
    // A wildcard over an object is skipped (rule 6): navigation goes on in the object.
    if (!Array.isArray(v)) continue;
    const kids = (node.kids ??= []);
    for (let k = 0; k < v.length; k++) {
      walk(steps, i + 1, v[k], (kids[k] ??= newNode()), src, width);
    }
    return;
  }
  if (v !== undefined) (node.vals ??= new Array<unknown>(width))[src] = v;
};

/** Collects one snapshot of source values per leaf, depth first, in index order. */
export const collectLeaves = (node: ExpansionNode, current: unknown[], out: unknown[][]): void => {
  const vals = node.vals;
  if (vals !== undefined) {
    for (let s = 0; s < vals.length; s++) if (vals[s] !== undefined) current[s] = vals[s];
  }
  const kids = node.kids;
  if (kids !== undefined && kids.length > 0) {
    for (const kid of kids) collectLeaves(kid, current, out);
  } else {
    out.push(current.slice());
  }
  // A source's tuples are prefix-free, so nothing above this node set these slots.
  if (vals !== undefined) {
    for (let s = 0; s < vals.length; s++) if (vals[s] !== undefined) current[s] = undefined;
  }
};

const sameValue = (a: unknown, b: unknown): boolean =>
  a === b ||
  (isMissing(a) && isMissing(b)) ||
  (typeof a === 'object' &&
    typeof b === 'object' &&
    a !== null &&
    b !== null &&
    JSON.stringify(a) === JSON.stringify(b));

const sameRow = (a: unknown[], b: unknown[]): boolean => {
  for (let i = 0; i < a.length; i++) if (!sameValue(a[i], b[i])) return false;
  return true;
};

// Below this many rows, comparing pairs is cheaper than serialising every row.
const PAIRWISE_LIMIT = 32;

/** Drops expanded rows equal to an earlier one (rule 7), keeping first-occurrence order. */
export const dedupe = (rows: unknown[][]): unknown[][] => {
  if (rows.length < 2) return rows;
  const kept: unknown[][] = [];
  if (rows.length <= PAIRWISE_LIMIT) {
    for (const row of rows) if (!kept.some((k) => sameRow(k, row))) kept.push(row);
    return kept;
  }
  const seen = new Set<string>();
  for (const row of rows) {
    // JSON writes undefined array slots as null, matching sameValue's view of missing.
    const id = JSON.stringify(row);
    if (!seen.has(id)) {
      seen.add(id);
      kept.push(row);
    }
  }
  return kept;
};
