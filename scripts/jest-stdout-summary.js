// A jest reporter that prints the run's totals on standard output, beside
// jest's own report (which goes to standard error), as one plain line:
// "N passed, N failed, N skipped", nothing before or after it. CI reads that
// shape to tell a run that executed tests from one that executed none. It has no
// "Tests:" label, so it cannot be taken for jest's own summary line. With SLUICE_TEST_SUMMARY set, the line is also
// written to that file, so .ci/run can repeat it as its very last line, after
// the test servers' teardown has printed whatever it prints.
import { writeFileSync } from 'node:fs';

// eslint-disable-next-line no-restricted-syntax -- jest loads a reporter by its default export
export default class StdoutSummary {
  onRunComplete(_contexts, results) {
    const line = `${results.numPassedTests} passed, ${results.numFailedTests} failed, ${results.numPendingTests} skipped\n`;
    process.stdout.write(line);
    if (process.env.SLUICE_TEST_SUMMARY) writeFileSync(process.env.SLUICE_TEST_SUMMARY, line);
  }
}
