import { InvalidError } from './errors.js';
import { isLabelValue, isQualifiedName } from './validation.js';

export type LabelRequirement =
  { key: string; op: 'equals' | 'notEquals'; value: string } | { key: string; op: 'exists' | 'notExists' };

/**
 * Parses the equality-based label selectors Kubernetes clients use most:
 * `k=v` (or `k==v`), `k!=v`, `k`, `!k`, joined by commas (all must hold).
 * Set-based forms (`in`, `notin`) are refused rather than misread.
 */
export function parseLabelSelector(selector: string | undefined): LabelRequirement[] {
  if (selector === undefined || selector.trim() === '') return [];
  return selector.split(',').map((raw) => {
    const term = raw.trim();
    const match = /^(!?)\s*([^=!\s]+)\s*(?:(==|=|!=)\s*(\S*))?$/.exec(term);
    if (!match) throw new InvalidError(`label selector term ${JSON.stringify(term)} is not supported`);
    const [, not, key = '', op, value] = match;
    if (!isQualifiedName(key))
      throw new InvalidError(`label selector: ${JSON.stringify(key)} is not a label key`);
    if (op === undefined) return { key, op: not ? 'notExists' : 'exists' };
    if (not) throw new InvalidError(`label selector term ${JSON.stringify(term)} is not supported`);
    if (value === undefined || !isLabelValue(value)) {
      throw new InvalidError(`label selector: ${JSON.stringify(value)} is not a label value`);
    }
    return { key, op: op === '!=' ? 'notEquals' : 'equals', value };
  });
}

/** Whether `labels` satisfy every requirement (what the SQL filter computes, for tests and callers). */
export function matchesLabels(
  requirements: LabelRequirement[],
  labels: Record<string, string> = {},
): boolean {
  return requirements.every((r) => {
    const has = Object.hasOwn(labels, r.key);
    switch (r.op) {
      case 'exists':
        return has;
      case 'notExists':
        return !has;
      case 'equals':
        return has && labels[r.key] === r.value;
      case 'notEquals':
        return !has || labels[r.key] !== r.value;
    }
  });
}
