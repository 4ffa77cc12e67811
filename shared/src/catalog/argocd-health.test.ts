import { describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { SLUICE_KINDS } from '../ports/cluster.js';
import { healthCheckPath, renderHealthCheck } from './argocd-health.js';

const ARGOCD_DIR = resolve(import.meta.dirname, '../../../charts/sluice/argocd');

describe('Argo CD health checks', () => {
  it.each(SLUICE_KINDS)('%s: health.lua is committed exactly as `npm run gen:argocd` writes it', (kind) => {
    // On failure: run `npm run gen:argocd` and commit the result.
    expect(readFileSync(join(ARGOCD_DIR, healthCheckPath(kind)), 'utf8')).toBe(renderHealthCheck(kind));
  });

  it.each(SLUICE_KINDS)('%s: names its kind and uses only the base and table libraries', (kind) => {
    const script = renderHealthCheck(kind);
    expect(script.startsWith(`-- Argo CD health check for sluice.dev/v1alpha1 ${kind}.\n`)).toBe(true);
    expect(script).not.toMatch(/\b(string|math|os|io)\.[a-z]+\(/);
    expect(script).not.toMatch(/[\t\r]|\n\n\n| \n/);
  });
});
