import junitReport, { type Builder } from 'junit-report-builder';
import type { SiteUpdateProgress } from './site-update-progress.ts';
import { lcpText } from './site-update-progress.ts';

// The package is CommonJS with types that declare an ES default export: under Node's ESM the
// default import is the builder itself.
const junit = junitReport as unknown as Builder;

/**
 * A site update as JUnit XML, one test case per page, so a CI's test view lists the pages
 * that failed their budgets (BudgetExceeded) or were not measured (UpdateFailed) by URL.
 */
export function siteUpdateJunitXml(status: SiteUpdateProgress, elapsedSeconds: number): string {
  const builder = junit.newBuilder().name(`perfwatch ${status.origin}`);
  const suite = builder
    .testSuite()
    .name(`perfwatch site ${status.origin}`)
    .property('origin', status.origin)
    .property('update', status.id)
    .time(elapsedSeconds);
  for (const page of status.pages) {
    const testCase = suite.testCase().className('perfwatch.site').name(page.url);
    if (page.status !== 'done') {
      testCase.failure(`${page.url} was not measured: ${page.reason ?? page.status}`, 'UpdateFailed');
      continue;
    }
    const measured = `score ${page.score ?? '-'}, LCP ${lcpText(page.lcp)}`;
    testCase.standardOutput(measured);
    if ((page.budgetFailures ?? 0) > 0)
      testCase.failure(`${page.url}: ${page.budgetFailures} budget checks failed (${measured})`, 'BudgetExceeded');
  }
  return builder.build();
}
