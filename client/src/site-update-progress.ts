import Table from 'cli-table3';
import type { SiteUpdatePageStatus, SiteUpdatePlan, SiteUpdateStatusView } from '@perfwatch/common';
import type { ProgressStream } from './update-progress.ts';

type SitePageProgress = Pick<SiteUpdatePageStatus, 'url' | 'status' | 'budgetFailures' | 'score' | 'lcp' | 'reason'>;
/** What the CLI reads of a site update's status (`/v1/updates/{id}`). */
export type SiteUpdateProgress = Pick<SiteUpdateStatusView, 'id' | 'origin' | 'status'> & { pages: SitePageProgress[] };

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;

/**
 * "12 pages × 1 device (mobile) × 1 location (london) × 1 run = 12 audits; you have 0 runs queued
 * of 600", and whether the gateway would refuse it (the plan alone is answered past the limit too).
 */
export function planText(plan: SiteUpdatePlan): string {
  return (
    `${plural(plan.pages, 'page')} × ${plural(plan.devices.length, 'device')} (${plan.devices.join(', ')})` +
    ` × ${plural(plan.locations.length, 'location')} (${plan.locations.join(', ')}) × ${plural(plan.runs, 'run')}` +
    ` = ${plural(plan.audits, 'audit')}; you have ${plural(plan.queuedRuns, 'run')} queued of ${plan.limit}` +
    (plan.queuedRuns + plan.audits > plan.limit ? ': past your limit, the update would be refused' : '')
  );
}

/** LCP as people read it: "850 ms", "1.2 s". */
export function lcpText(ms: number | null): string {
  if (ms === null) return '-';
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}

/** The page as a line shows it: its path on the site's origin, the whole URL elsewhere. */
function pathOf(url: string, origin: string): string {
  const parsed = URL.parse(url);
  return parsed?.origin === origin ? `${parsed.pathname}${parsed.search}` : url;
}

/** A page that ended, as its progress line says: "done  /product/3  score 92  LCP 1.2 s  2 budgets failed". */
function pageLine(page: SitePageProgress, origin: string): string {
  const path = pathOf(page.url, origin);
  if (page.status === 'failed') return `failed  ${path}  ${page.reason ?? 'no reason given'}`;
  const budgets = page.budgetFailures ? `  ${plural(page.budgetFailures, 'budget')} failed` : '';
  return `done    ${path}  score ${page.score ?? '-'}  LCP ${lcpText(page.lcp)}${budgets}`;
}

const ended = (page: SitePageProgress) => page.status === 'done' || page.status === 'failed';

/**
 * Shows a site update as it runs: a line when the update's own state changes, and one per page
 * as it ends (`[3/12] done  /product/3  score 92  LCP 1.2 s`), in the order the pages end (those
 * seen ending in one poll, in the update's order). Lines
 * only, never redrawn: a CI log keeps every byte, and a terminal shows the same.
 */
export function siteUpdateProgress(stream: ProgressStream, now: () => number = Date.now) {
  const started = now();
  const shown = new Set<string>();
  let state = '';
  return {
    show(status: SiteUpdateProgress): void {
      const changed = status.status !== state;
      state = status.status;
      const stateLine = () =>
        stream.write(
          `site update ${status.id} of ${status.origin}: ${state} (${Math.round((now() - started) / 1000)} s)\n`,
        );
      // An update's end comes after its last pages' lines, its start before its first.
      const ending = state === 'done' || state === 'failed';
      if (changed && !ending) stateLine();
      for (const page of status.pages) {
        if (!ended(page) || shown.has(page.url)) continue;
        shown.add(page.url);
        stream.write(`[${shown.size}/${status.pages.length}] ${pageLine(page, status.origin)}\n`);
      }
      if (changed && ending) stateLine();
    },
  };
}

// Tables go to terminals and CI logs alike: no colours, and no rule between rows.
const plain = { style: { head: [], border: [] }, chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' } };

/** One row per page: its status, score, LCP, budget failures and, for a page that failed, why. */
export function sitePagesTable(status: SiteUpdateProgress): string {
  const table = new Table({ ...plain, head: ['page', 'status', 'score', 'LCP', 'budgets failed', 'reason'] });
  for (const page of status.pages)
    table.push([
      page.url,
      page.status,
      page.score ?? '-',
      lcpText(page.lcp),
      page.budgetFailures ?? '-',
      page.reason ?? '',
    ]);
  return table.toString();
}

/** Why a site fails its gate: the pages whose budgets failed, and those not measured. */
function siteGateFailures(status: SiteUpdateProgress): { budgets: string[]; failed: string[] } {
  return {
    budgets: status.pages.filter((page) => (page.budgetFailures ?? 0) > 0).map((page) => page.url),
    failed: status.pages.filter((page) => page.status !== 'done').map((page) => page.url),
  };
}

/**
 * What the update came to, in a line or a few: all passed, or which pages failed their budgets
 * and which were not measured. `label` says whose verdict it is: the gate's (`--ci`) or the update's.
 */
export function siteVerdictText(status: SiteUpdateProgress, label: 'site gate' | 'site update'): string {
  const { budgets, failed } = siteGateFailures(status);
  if (status.status === 'done' && budgets.length === 0 && failed.length === 0)
    return `${label}: passed (${plural(status.pages.length, 'page')})`;
  const lines = [`${label}: FAILED${status.status === 'failed' ? ' (the site update failed)' : ''}`];
  if (budgets.length > 0) lines.push(`budgets failed on ${plural(budgets.length, 'page')}:`, ...indented(budgets));
  if (failed.length > 0) lines.push(`not measured, ${plural(failed.length, 'page')}:`, ...indented(failed));
  return lines.join('\n');
}

const indented = (urls: string[]) => urls.map((url) => `  ${url}`);
