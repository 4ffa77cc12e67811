// `npm run gen:argocd`: writes the health check of every sluice.dev kind,
// charts/sluice/argocd/<group>/<Kind>/health.lua, from its template and the
// kind's part (shared/src/catalog/argocd-health.ts, built), then the argocd-cm
// patch that holds them all (gen-cm-patch.js). The drift test beside the
// template and e2e/argocd-health.test.ts fail when a committed file differs.
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { healthCheckPath, renderHealthCheck } from '@sluice/shared/catalog';
import { SLUICE_KINDS } from '@sluice/shared/ports';
import { ARGOCD_DIR, CM_PATCH, renderCmPatch } from './gen-cm-patch.js';

for (const kind of SLUICE_KINDS) {
  writeFileSync(path.join(ARGOCD_DIR, healthCheckPath(kind)), renderHealthCheck(kind));
}
writeFileSync(CM_PATCH, renderCmPatch());
console.log(
  `gen:argocd: ${SLUICE_KINDS.length} health checks and argocd-cm-patch.yaml written to charts/sluice/argocd/`,
);
