import { isSecretRef, type SecretRef } from '@sluice/shared/connectors';
import { validateMapperConfig } from '@sluice/shared/mapper';
import { REDACTED } from '@sluice/shared/schemas';
import type { GatewayContext } from '../context.js';
import type { ValidationIssue } from '../http/errors.js';
import { missingReferences, teamSecretScope } from './secrets.js';

// Spec 2.14 for mapper rules: the passphrase of an encrypting rule
// (`encrypt_key`) is a secret like any other. Inline values go into the
// subscription's managed secret (keys `encrypt_key-<rule index>`, rewritten
// whole on every write); reads show `<redacted>`; `<redacted>` sent back keeps
// the passphrase of the previous rule with the same output `key`.

type Rule = Record<string, unknown>;
const isRule = (v: unknown): v is Rule => typeof v === 'object' && v !== null && !Array.isArray(v);
const ref = (name: string, key: string): SecretRef => ({ valueFrom: { secretKeyRef: { name, key } } });

export interface PreparedMapper {
  rules: Rule[];
  /** The whole content of the managed secret after this write. */
  data: Record<string, string>;
}

/**
 * Validates mapper rules (every issue, located under `loc`) and moves their
 * inline passphrases out. Throws nothing: the caller merges the issues with
 * its own and answers one 422.
 */
export async function prepareMapper(
  ctx: GatewayContext,
  rules: unknown[],
  previous: Rule[] | null,
  secretName: string,
  loc: (string | number)[],
  /** The team of the subscription: references are checked against its grants. */
  teamId: string,
): Promise<{ prepared: PreparedMapper; issues: ValidationIssue[] }> {
  const scope = await teamSecretScope(ctx, [teamId], [secretName]);
  const issues: ValidationIssue[] = [];
  const data: Record<string, string> = {};
  const out: Rule[] = [];
  const refs: { loc: (string | number)[]; value: unknown }[] = [];
  for (const [i, raw] of rules.entries()) {
    if (!isRule(raw)) {
      out.push(raw as Rule);
      continue;
    }
    const rule = { ...raw };
    const key = `encrypt_key-${i}`;
    const value = rule.encrypt_key;
    if (value === REDACTED) {
      const before = previous?.find((r) => r.key === rule.key)?.encrypt_key;
      if (isSecretRef(before) && before.valueFrom.secretKeyRef.name === secretName) {
        data[key] = await ctx.secretStore.resolve(
          ctx.config.workerNamespace,
          before.valueFrom.secretKeyRef,
          scope,
        );
        rule.encrypt_key = ref(secretName, key);
      } else if (isSecretRef(before)) {
        // A kept reference of the user's is checked again: the team may have lost its grant.
        rule.encrypt_key = before;
        refs.push({ loc: [...loc, i, 'encrypt_key'], value: before });
      } else {
        issues.push({
          loc: [...loc, i, 'encrypt_key'],
          msg: `"${REDACTED}" keeps a stored passphrase, and rule "${String(rule.key)}" has none: send it or a valueFrom reference`,
          type: 'missing',
        });
      }
    } else if (typeof value === 'string' && value.length > 0) {
      data[key] = value;
      rule.encrypt_key = ref(secretName, key);
    } else if (isSecretRef(value)) {
      refs.push({ loc: [...loc, i, 'encrypt_key'], value });
    }
    out.push(rule);
  }
  // The mapper validates passphrases as strings: a reference stands for one.
  const forValidation = out.map((r) =>
    isRule(r) && isSecretRef(r.encrypt_key) ? { ...r, encrypt_key: '*' } : r,
  );
  issues.push(...validateMapperConfig(forValidation).map((i) => ({ ...i, loc: [...loc, ...i.loc] })));
  issues.push(...(await missingReferences(ctx, refs, scope)));
  return { prepared: { rules: out, data }, issues };
}

/** Rules as a read shows them: passphrases held in the managed secret are `<redacted>`. */
export function redactMapper(rules: unknown[], secretName: string): Rule[] {
  return rules.map((r) => {
    if (!isRule(r)) return r as Rule;
    const v = r.encrypt_key;
    if (typeof v === 'string' || (isSecretRef(v) && v.valueFrom.secretKeyRef.name === secretName)) {
      return { ...r, encrypt_key: REDACTED };
    }
    return r;
  });
}
