// Sluice is ESM end to end (see docs/architecture.md, "ESM"); jest runs in its
// ESM mode (`--experimental-vm-modules`, set by `npm test`) and @swc/jest strips
// types without changing the module system.
const swc = [
  '@swc/jest',
  {
    jsc: { parser: { syntax: 'typescript' }, target: 'es2023', keepClassNames: true },
    module: { type: 'es6' },
    sourceMaps: 'inline',
  },
];

/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  extensionsToTreatAsEsm: ['.ts'],
  transform: { '^.+\\.ts$': swc },
  // Sources import siblings as `./x.js` (NodeNext); tests run the .ts files.
  moduleNameMapper: {
    '^@sluice/shared/([a-z-]+)$': '<rootDir>/shared/src/$1/index.ts',
    '^@sluice/gateway$': '<rootDir>/gateway/src/index.ts',
    '^@sluice/operator$': '<rootDir>/operator/src/index.ts',
    '^@sluice/dataplane$': '<rootDir>/dataplane/src/index.ts',
    '^@sluice/testing/([a-z-]+)$': '<rootDir>/testing/src/$1.ts',
    '^(\\.{1,2}/.*)\\.js$': '$1',
  },
  testMatch: ['<rootDir>/{shared,gateway,operator,dataplane,e2e}/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  globalSetup: '<rootDir>/scripts/jest-global-setup.js',
  // jest's report goes to standard error; the totals also go to standard output.
  reporters: ['default', '<rootDir>/scripts/jest-stdout-summary.js'],
  // Also the default of every hook: a beforeAll that starts a gateway (PGlite,
  // migrations) or a server takes seconds alone but far longer on two cores
  // shared with other work (load 7–10), where 30 s failed whole files.
  testTimeout: 120000,
  // Files run in a worker process (one on two cores) that jest replaces after
  // any file that leaves it holding more than this: run in band, in jest's own
  // process, what every file leaves behind (PGlite instances, broker clients,
  // V8's code caches of ~130 files) added up until the heap ran out
  // (`Ineffective mark-compacts near heap limit`) three quarters through the
  // suite. Setting a limit is also what makes jest use a worker at all.
  workerIdleMemoryLimit: '1536MB',
  // A failed test that skipped its cleanup (a watch still reconnecting, a
  // server still listening) once kept jest alive after the summary until CI's
  // 90-minute limit. The summary and the exit code are final once printed.
  forceExit: true,
};
