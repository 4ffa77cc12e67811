// `npm run gen:crds`: writes every CRD into each directory of CRD_DIRECTORIES
// and removes stale sluice.dev files there (a renamed kind leaves none behind).
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { CRD_DIRECTORIES, renderCrdFiles } from './render.js';

const root = resolve(process.argv[2] ?? '.');
const files = renderCrdFiles();
for (const dir of CRD_DIRECTORIES) {
  const target = join(root, dir);
  mkdirSync(target, { recursive: true });
  for (const name of readdirSync(target)) {
    if (name.startsWith('sluice.dev_') && !files.has(name)) rmSync(join(target, name));
  }
  for (const [name, text] of files) writeFileSync(join(target, name), text);
  console.log(`gen:crds: ${files.size} CRDs written to ${dir}/`);
}
