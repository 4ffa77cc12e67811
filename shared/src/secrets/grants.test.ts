import { describe, expect, it } from '@jest/globals';
import {
  ALLOWED_ENVS_ANNOTATION,
  ALLOWED_TEAMS_ANNOTATION,
  CONTROL_PLANE_LABEL,
  grantAnnotations,
  grantOf,
  isSecretUsable,
  type SecretMeta,
} from './grants.js';
import type { SecretScope } from '../ports/secret-store.js';

const meta = (
  name: string,
  annotations: Record<string, string> = {},
  labels: Record<string, string> = {},
): SecretMeta => ({ name, labels, annotations });
const scope = (over: Partial<SecretScope> = {}): SecretScope => ({
  teamIds: ['team-a'],
  envIds: ['env-1'],
  ownSecrets: ['sluice-connector-mine'],
  ...over,
});

describe('who may reference a secret', () => {
  it('refuses a secret nobody granted, to everyone, superusers included', () => {
    expect(isSecretUsable(meta('teama-prod-db'), scope())).toBe(false);
    expect(isSecretUsable(meta('teama-prod-db'), scope({ anyGrant: true }))).toBe(false);
  });

  it('grants by team and by environment (every team of it), comma-separated, blanks ignored', () => {
    const byTeam = meta('db', { [ALLOWED_TEAMS_ANNOTATION]: ' team-x , team-a ' });
    expect(isSecretUsable(byTeam, scope())).toBe(true);
    expect(isSecretUsable(byTeam, scope({ teamIds: ['team-b'] }))).toBe(false);
    const byEnv = meta('db', { [ALLOWED_ENVS_ANNOTATION]: 'env-1' });
    expect(isSecretUsable(byEnv, scope({ teamIds: ['team-b'] }))).toBe(true);
    expect(isSecretUsable(byEnv, scope({ envIds: ['env-2'] }))).toBe(false);
    expect(grantOf(byTeam)).toEqual({ teamIds: ['team-x', 'team-a'], envIds: [] });
  });

  it("never lets the control plane's secrets be used, whatever their annotations", () => {
    const keys = meta(
      'prod-sluice-keys',
      { [ALLOWED_TEAMS_ANNOTATION]: 'team-a', [ALLOWED_ENVS_ANNOTATION]: 'env-1' },
      { [CONTROL_PLANE_LABEL]: 'true' },
    );
    expect(isSecretUsable(keys, scope())).toBe(false);
    expect(isSecretUsable(keys, scope({ anyGrant: true }))).toBe(false);
  });

  it("lets an object use its own managed secret and no other object's, grant or not", () => {
    expect(isSecretUsable(meta('sluice-connector-mine'), scope())).toBe(true);
    expect(isSecretUsable(meta('sluice-connector-other'), scope())).toBe(false);
    const annotated = meta('sluice-connector-other', { [ALLOWED_TEAMS_ANNOTATION]: 'team-a' });
    expect(isSecretUsable(annotated, scope({ anyGrant: true }))).toBe(false);
    const labelled = meta('renamed', {}, { 'sluice.dev/managed': 'true' });
    expect(isSecretUsable(labelled, scope())).toBe(false);
  });

  it("counts any environment grant in the operator's look, which cannot see environments", () => {
    const byEnv = meta('db', { [ALLOWED_ENVS_ANNOTATION]: 'env-9' });
    expect(isSecretUsable(byEnv, scope({ envIds: [] }))).toBe(false);
    expect(isSecretUsable(byEnv, scope({ envIds: [], envGrantsUnchecked: true }))).toBe(true);
    expect(isSecretUsable(meta('db'), scope({ envGrantsUnchecked: true }))).toBe(false);
  });

  it('writes a grant as sorted, de-duplicated annotations, and none for an empty one', () => {
    expect(grantAnnotations({ teamIds: ['b', 'a', 'b'], envIds: [] })).toEqual({
      [ALLOWED_TEAMS_ANNOTATION]: 'a,b',
    });
    expect(grantAnnotations({ teamIds: [], envIds: [] })).toEqual({});
  });
});
