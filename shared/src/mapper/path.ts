// Paths into a message. The pipe form (`a|b|0|*|c`) is the mapper's definition
// (spec 2.10 rule 2); the older dollar-prefixed dotted form (`$.a.b[0].c`,
// `$.items[*].sku`) is translated into the same segments.

export const WILDCARD = '*';

export type PathResult = { ok: true; segments: string[] } | { ok: false; msg: string };

/** A numeric segment indexes an array; on an object it is an ordinary key. */
export const isIndexSegment = (segment: string): boolean => /^\d+$/.test(segment);

// `$` alone, or `$` followed by `.` or `[`: anything else (even `$price|x`) is
// a pipe path whose first key happens to start with a dollar sign.
const isDollarPath = (path: string): boolean =>
  path === '$' || path.startsWith('$.') || path.startsWith('$[');

const DOLLAR_TOKEN = /\.([^.[\]'"]+)|\[(\d+|\*)\]|\['([^']*)'\]|\["([^"]*)"\]/y;

const parseDollarPath = (path: string): PathResult => {
  const segments: string[] = [];
  DOLLAR_TOKEN.lastIndex = 1;
  while (DOLLAR_TOKEN.lastIndex < path.length) {
    const at = DOLLAR_TOKEN.lastIndex;
    const m = DOLLAR_TOKEN.exec(path);
    if (m === null) {
      const rest = path.slice(at);
      const hint = rest.startsWith('..') ? ' (recursive descent is not supported)' : '';
      return { ok: false, msg: `Invalid path '${path}': cannot read '${rest}' at offset ${at}${hint}` };
    }
    segments.push(m[1] ?? m[2] ?? m[3] ?? m[4] ?? '');
  }
  return { ok: true, segments };
};

/** Splits a path in either form into its segments; an empty path has none. */
export const parsePath = (path: string): PathResult => {
  if (path === '') return { ok: true, segments: [] };
  if (isDollarPath(path)) return parseDollarPath(path);
  const segments = path.split('|');
  if (segments.some((s) => s === '')) {
    return {
      ok: false,
      msg: `Invalid path '${path}': empty segment (two pipes in a row, or a pipe at an end)`,
    };
  }
  return { ok: true, segments };
};

/** The pipe form of a path (`$.items[*].sku` → `items|*|sku`), for display and migration. */
export const toPipePath = (path: string): string => {
  const parsed = parsePath(path);
  if (!parsed.ok) throw new Error(parsed.msg);
  const bad = parsed.segments.find((s) => s.includes('|') || s === '');
  if (bad !== undefined)
    throw new Error(`Path '${path}' has the key '${bad}', which the pipe form cannot express`);
  return parsed.segments.join('|');
};
