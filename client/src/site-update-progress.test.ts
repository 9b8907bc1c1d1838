import { describe, expect, it } from 'vitest';
import type { SiteUpdatePageStatus, SiteUpdateStatusView } from '@perfwatch/common';
import {
  lcpText,
  planText,
  sitePagesTable,
  siteUpdateProgress,
  siteVerdictText,
  type SiteUpdateProgress,
} from './site-update-progress.ts';

const SHOP = 'https://shop.example';
const ID = '6f1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f';

const page = (path: string, change: Partial<SiteUpdatePageStatus> = {}): SiteUpdatePageStatus => ({
  url: `${SHOP}${path}`,
  updateId: null,
  status: 'queued',
  budgetFailures: null,
  score: null,
  lcp: null,
  reason: null,
  ...change,
});
const done = (path: string, score: number, lcp: number, budgetFailures = 0) =>
  page(path, { status: 'done', score, lcp, budgetFailures });

const statusOf = (state: SiteUpdateStatusView['status'], pages: SiteUpdatePageStatus[]): SiteUpdateProgress => ({
  id: ID,
  origin: SHOP,
  status: state,
  pages,
});

describe('planText', () => {
  it('multiplies the plan out and says how much of the limit is taken', () => {
    const plan = { pages: 12, devices: ['mobile' as const], locations: ['london' as const], runs: 1, audits: 12 };
    expect(planText({ ...plan, queuedRuns: 0, limit: 600 })).toBe(
      '12 pages × 1 device (mobile) × 1 location (london) × 1 run = 12 audits; you have 0 runs queued of 600',
    );
    expect(
      planText({
        pages: 1,
        devices: ['mobile', 'desktop'],
        locations: ['london', 'tokyo'],
        runs: 3,
        audits: 12,
        queuedRuns: 1,
        limit: 20,
      }),
    ).toBe(
      '1 page × 2 devices (mobile, desktop) × 2 locations (london, tokyo) × 3 runs = 12 audits; you have 1 run queued of 20',
    );
    expect(planText({ ...plan, queuedRuns: 589, limit: 600 })).toMatch(
      /you have 589 runs queued of 600: past your limit, the update would be refused$/,
    );
  });
});

describe('lcpText', () => {
  it('writes milliseconds under a second, seconds to a tenth above', () => {
    expect([lcpText(null), lcpText(850.4), lcpText(1000), lcpText(1249)]).toEqual(['-', '850 ms', '1.0 s', '1.2 s']);
  });
});

describe('siteUpdateProgress', () => {
  it("writes a line per change of the update's state and one per page as it ends, the end after the last page", () => {
    const written: string[] = [];
    let t = 0;
    const progress = siteUpdateProgress({ write: (text: string) => written.push(text) }, () => (t += 1000));
    const pages = ['/', '/product/3', '/product/4'].map((path) => page(path));
    progress.show(statusOf('queued', pages));
    progress.show(statusOf('running', [pages[0]!, done('/product/3', 92, 1234), pages[2]!]));
    progress.show(statusOf('running', [pages[0]!, done('/product/3', 92, 1234), pages[2]!]));
    progress.show(
      statusOf('failed', [
        done('/', 71, 2600, 2),
        done('/product/3', 92, 1234),
        page('/product/4', { status: 'failed', reason: 'TIMEOUT: no agent answered' }),
      ]),
    );
    expect(written).toEqual([
      `site update ${ID} of ${SHOP}: queued (1 s)\n`,
      `site update ${ID} of ${SHOP}: running (2 s)\n`,
      '[1/3] done    /product/3  score 92  LCP 1.2 s\n',
      '[2/3] done    /  score 71  LCP 2.6 s  2 budgets failed\n',
      '[3/3] failed  /product/4  TIMEOUT: no agent answered\n',
      `site update ${ID} of ${SHOP}: failed (3 s)\n`,
    ]);
  });
});

describe('sitePagesTable and siteVerdictText', () => {
  const finished = statusOf('failed', [
    done('/', 71, 2600, 1),
    done('/product/3', 92, 840),
    page('/product/4', { status: 'failed', reason: 'TIMEOUT' }),
  ]);

  it('lists every page with its whole URL, status, score, LCP, budget failures and reason', () => {
    const rows = sitePagesTable(finished)
      .split('\n')
      .filter((line) => line.includes('│'))
      .map((line) =>
        line
          .split('│')
          .map((cell) => cell.trim())
          .filter(Boolean),
      );
    expect(rows).toEqual([
      ['page', 'status', 'score', 'LCP', 'budgets failed', 'reason'],
      [`${SHOP}/`, 'done', '71', '2.6 s', '1'],
      [`${SHOP}/product/3`, 'done', '92', '840 ms', '0'],
      [`${SHOP}/product/4`, 'failed', '-', '-', '-', 'TIMEOUT'],
    ]);
  });

  it('names the pages that failed their budgets and those not measured', () => {
    expect(siteVerdictText(finished, 'site gate')).toBe(
      [
        'site gate: FAILED (the site update failed)',
        'budgets failed on 1 page:',
        `  ${SHOP}/`,
        'not measured, 1 page:',
        `  ${SHOP}/product/4`,
      ].join('\n'),
    );
  });

  it('passes when every page was measured within its budgets', () => {
    const passed = statusOf('done', [done('/', 90, 900), done('/cart', 95, 700)]);
    expect(siteVerdictText(passed, 'site update')).toBe('site update: passed (2 pages)');
  });
});
