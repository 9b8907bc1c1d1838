import junitReport, { type Builder } from 'junit-report-builder';
import { budgetKeyText, type BudgetReport } from '@perfwatch/common';

// The package is CommonJS with types that declare an ES default export: under Node's ESM the
// default import is the builder itself.
const junit = junitReport as unknown as Builder;

/**
 * A budget report as JUnit XML, the format CI systems (GitHub Actions reporters, GitLab,
 * Jenkins) show as test results: one suite per device and location, one test case per check.
 * A failed update (no result to check) is one failing case, so the pipeline shows why.
 */
export function budgetJunitXml(url: string, report: BudgetReport | { error: string }, elapsedSeconds: number): string {
  const builder = junit.newBuilder().name(`perfwatch ${url}`);
  if ('error' in report) {
    builder
      .testSuite()
      .name(`perfwatch ${url}`)
      .testCase()
      .className('perfwatch.update')
      .name('update')
      .time(elapsedSeconds)
      .failure(report.error, 'UpdateFailed');
    return builder.build();
  }
  for (const cell of report.cells) {
    const suite = builder
      .testSuite()
      .name(`${url} ${cell.device}/${cell.location}`)
      .property('url', url)
      .property('device', cell.device)
      .property('location', cell.location);
    if (cell.checks.length === 0)
      suite.testCase().className(`perfwatch.${cell.device}.${cell.location}`).name('measured (no budgets)');
    for (const check of cell.checks) {
      const testCase = suite
        .testCase()
        .className(`perfwatch.${cell.device}.${cell.location}`)
        .name(`${check.kind === 'budget' ? 'budget' : 'regression'} ${budgetKeyText(check)}`);
      testCase.standardOutput(check.message);
      if (!check.pass) testCase.failure(check.message, check.kind === 'budget' ? 'BudgetExceeded' : 'Regression');
    }
  }
  return builder.build();
}
