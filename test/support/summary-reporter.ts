import type { Reporter, TestModule, TestRunEndReason } from 'vitest/node';

/**
 * Prints one closing line, exactly `N passed, N failed, N skipped` with nothing before or after
 * it on that line, that CI systems reading plain output can count, beside vitest's own summary.
 * (A prefix such as `tests:` made one CI read the run as having executed no test.)
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(
    testModules: ReadonlyArray<TestModule>,
    unhandledErrors: ReadonlyArray<unknown>,
    reason: TestRunEndReason,
  ): void {
    const counts = { passed: 0, failed: 0, skipped: 0 };
    for (const module of testModules) {
      for (const test of module.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') counts.passed++;
        else if (state === 'failed') counts.failed++;
        else counts.skipped++;
      }
      // A file that failed to load has no tests to count, but it failed all the same.
      if (module.state() === 'failed' && [...module.children.allTests()].length === 0) counts.failed++;
    }
    counts.failed += unhandledErrors.length;
    // A run that failed outside any test (a global setup that could not start its servers)
    // must not read as all green.
    if (reason !== 'passed' && counts.failed === 0) counts.failed = 1;
    process.stdout.write(`\n${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`);
  }
}
