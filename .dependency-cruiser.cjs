// The package boundaries and the no-cycle rule of docs/architecture.md
// ("Packages and their boundaries"), checked by `npm run check:static`.
const PACKAGES = '(shared|dataplane|operator|gateway)';
// Every workspace, tests and harnesses included.
const ALL = '(shared|dataplane|operator|gateway|testing|e2e|bench)';

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      comment: 'An import cycle makes load order matter and hides which module owns what.',
      severity: 'error',
      from: { path: `^${PACKAGES}/src/` },
      to: { circular: true },
    },
    {
      name: 'shared-stands-alone',
      comment: 'shared holds what every package uses; it imports none of them.',
      severity: 'error',
      from: { path: '^shared/src/' },
      to: { path: '^(dataplane|operator|gateway)/' },
    },
    {
      name: 'sources-without-test-harnesses',
      comment: 'The test harnesses (@sluice/testing) are for tests only.',
      severity: 'error',
      from: { path: `^${PACKAGES}/src/`, pathNot: '\\.test\\.ts$' },
      to: { path: '^testing/' },
    },
    {
      name: 'dataplane-on-shared-only',
      comment: 'The data plane (workers, clients of external systems) knows nothing of the control plane.',
      severity: 'error',
      from: { path: '^dataplane/src/' },
      to: { path: '^(operator|gateway)/' },
    },
    {
      name: 'operator-is-the-control-plane',
      comment:
        'The operator starts the worker program by path; it never imports the data plane or the gateway.',
      severity: 'error',
      from: { path: '^operator/src/' },
      to: { path: '^(dataplane|gateway)/' },
    },
    {
      name: 'gateway-embeds-the-operator-only',
      comment: 'The gateway uses the operator for one thing: running the controller in-process (server.ts).',
      severity: 'error',
      from: { path: '^gateway/src/', pathNot: '^gateway/src/server\\.ts$' },
      to: { path: '^operator/' },
    },
    {
      name: 'packages-by-name',
      comment:
        'Another package is imported by its name (@sluice/…), never by a relative path; tests included.',
      severity: 'error',
      from: { path: `^${ALL}/` },
      to: { dependencyTypes: ['local'], dependencyTypesNot: ['aliased'], path: `^${ALL}/`, pathNot: '^$1/' },
    },
    {
      name: 'declared-dependencies',
      comment: "An npm package a source imports is in its package's package.json.",
      severity: 'error',
      from: { path: `^${PACKAGES}/src/`, pathNot: '\\.test\\.ts$' },
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown'] },
    },
    {
      name: 'resolvable',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|node_modules)/' },
    tsConfig: { fileName: 'tsconfig.test.json' },
    tsPreCompilationDeps: true,
    combinedDependencies: false,
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'types', 'default'] },
  },
};
