// A jest reporter that prints the run's totals on standard output, beside
// jest's own report (which goes to standard error): a CI log that keeps only
// standard output still says how many tests ran and how many failed.
// eslint-disable-next-line no-restricted-syntax -- jest loads a reporter by its default export
export default class StdoutSummary {
  onRunComplete(_contexts, results) {
    const line = (what, passed, failed, skipped, total) =>
      `${what} ${passed} passed, ${failed} failed, ${skipped} skipped, ${total} total`;
    process.stdout.write(
      `${line('Test suites:', results.numPassedTestSuites, results.numFailedTestSuites, results.numPendingTestSuites, results.numTotalTestSuites)}\n` +
        `${line('Tests:', results.numPassedTests, results.numFailedTests, results.numPendingTests, results.numTotalTests)}\n`,
    );
  }
}
