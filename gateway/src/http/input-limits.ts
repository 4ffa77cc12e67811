import type { ValidationIssue } from './errors.js';
import type { Source } from './validation.js';

// Limits every request input meets before its route's own schema is checked:
// one place, so no route can forget them (docs/api.md, "Input limits").

/**
 * The deepest nesting of arrays and objects a request may carry. Real
 * configurations, mapper rules and messages stay far below it; a deeper body
 * would only exhaust the stack of whatever walks it next.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * PostgreSQL text and jsonb cannot hold U+0000, so a string with it can never
 * be stored, looked up or compared: it is refused at its location. The
 * OpenAPI document states the same rule as this pattern on its strings.
 */
export const NO_NUL_PATTERN = '^[^\\u0000]*$';

const NUL_MSG = 'Text must not contain the NUL character (\\u0000)';

/**
 * The issues of `value` against the input limits: NUL in any string or object
 * key, and nesting deeper than MAX_JSON_DEPTH (reported once, where the limit
 * is crossed, without walking further). Iterative, so a hostile depth cannot
 * overflow the stack here either.
 */
export function inputIssues(value: unknown, source: Source): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const stack: { v: unknown; loc: (string | number)[]; depth: number }[] = [
    { v: value, loc: [source], depth: 0 },
  ];
  while (stack.length) {
    const { v, loc, depth } = stack.pop()!;
    if (typeof v === 'string') {
      if (v.includes('\u0000')) issues.push({ loc, msg: NUL_MSG, type: 'string_pattern_mismatch' });
      continue;
    }
    if (!v || typeof v !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) {
      issues.push({
        loc,
        msg: `Nesting deeper than ${MAX_JSON_DEPTH} levels of arrays and objects is not accepted`,
        type: 'too_deep',
      });
      continue;
    }
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], loc: [...loc, i], depth: depth + 1 });
      continue;
    }
    const entries = Object.entries(v as Record<string, unknown>);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [k, child] = entries[i]!;
      if (k.includes('\u0000'))
        issues.push({ loc: [...loc, k], msg: NUL_MSG, type: 'string_pattern_mismatch' });
      else stack.push({ v: child, loc: [...loc, k], depth: depth + 1 });
    }
  }
  return issues;
}
