import { fileURLToPath } from 'node:url';

// The worker program is named by path, never imported: it belongs to the data
// plane (@sluice/dataplane), which the operator does not depend on. In the
// repository and in the image it sits beside the operator's own build.

/** The worker program relative to the repository (or image) root, as the pod template's args name it. */
export const WORKER_PROGRAM = 'dataplane/dist/main.js';

/** Its absolute path from this build (operator/dist/runtime/), for the process runtime. */
export const WORKER_PROGRAM_PATH = fileURLToPath(new URL(`../../../${WORKER_PROGRAM}`, import.meta.url));
