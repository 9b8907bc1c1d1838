import pLimit from 'p-limit';
import type { SiteUpdatePageStatus, SiteUpdateStatusView } from '@perfwatch/common';
import type { SnapshotReadsStore } from '../snapshots/store/snapshots-store.ts';
import type { UpdateRecord, UpdatesStore } from '../updates/store/updates-store.ts';
import type { SiteUpdatePage, SiteUpdateRecord } from './store/site-updates-store.ts';

export type SiteUpdateStatusStore = Pick<UpdatesStore, 'findUpdate'> & Pick<SnapshotReadsStore, 'findSnapshotCells'>;

/** Pages of a site update whose state one status read looks up at once. */
const STATUS_READS_AT_ONCE = 16;

type Measured = Pick<SiteUpdatePageStatus, 'budgetFailures' | 'score' | 'lcp'>;
const UNMEASURED: Measured = { budgetFailures: null, score: null, lcp: null };

/** A done page's snapshot: its failing budget checks, and the score and LCP of its first cell's median run. */
async function measuredOf(store: SiteUpdateStatusStore, update: UpdateRecord): Promise<Measured> {
  if (update.status !== 'done' || update.date === null) return UNMEASURED;
  const cells = await store.findSnapshotCells(update.projectId, update.date);
  if (!cells) return UNMEASURED;
  const budgetFailures = cells.results.reduce(
    (sum, cell) => sum + (cell.checks ?? []).filter((check) => !check.pass).length,
    0,
  );
  const first = cells.results[0];
  const median = first?.runs[first.median - 1];
  return { budgetFailures, score: median?.performance ?? null, lcp: median?.lcp ?? null };
}

/** One page's state, read from its own update's record. */
async function pageStatus(
  store: SiteUpdateStatusStore,
  userId: string,
  page: SiteUpdatePage,
): Promise<SiteUpdatePageStatus & { endedAt: Date | null }> {
  const failed = (reason: string) => ({
    url: page.url,
    updateId: page.updateId,
    status: 'failed' as const,
    ...UNMEASURED,
    reason,
    endedAt: null,
  });
  if (page.reason !== null || page.updateId === null) return failed(page.reason ?? 'not queued');
  const update = await store.findUpdate(userId, page.updateId);
  if (!update) return failed('its update is no longer stored');
  const ended = update.status === 'done' || update.status === 'failed';
  return {
    url: page.url,
    updateId: page.updateId,
    status: update.status,
    ...(await measuredOf(store, update)),
    reason: update.status === 'failed' ? (update.reason ?? 'failed') : null,
    endedAt: ended ? update.updatedAt : null,
  };
}

/**
 * `/v1/updates/{id}` of a site update: each page's state from its update's record (queued,
 * running, done with its snapshot's numbers, failed with the reason); the whole is done once
 * every page ended, failed when any did, running once any page started or ended.
 */
export async function siteUpdateStatus(
  store: SiteUpdateStatusStore,
  record: SiteUpdateRecord,
): Promise<SiteUpdateStatusView> {
  // A few reads at a time: a poll of a 1,000-page update would otherwise ask the store 2,000 at once.
  const limit = pLimit(STATUS_READS_AT_ONCE);
  const pages = await Promise.all(record.pages.map((page) => limit(() => pageStatus(store, record.userId, page))));
  const done = pages.filter((page) => page.status === 'done').length;
  const failed = pages.filter((page) => page.status === 'failed').length;
  const ended = done + failed === pages.length;
  const started = pages.some((page) => page.status !== 'queued');
  const endedAt = Math.max(record.createdAt.getTime(), ...pages.map((page) => page.endedAt?.getTime() ?? 0));
  return {
    id: record.id,
    kind: 'site',
    siteId: record.siteId,
    origin: record.origin,
    status: ended ? (failed > 0 ? 'failed' : 'done') : started ? 'running' : 'queued',
    createdAt: record.createdAt.toISOString(),
    finishedAt: ended ? new Date(endedAt).toISOString() : null,
    progress: { pages: pages.length, done, failed },
    budgetFailures: pages.reduce((sum, page) => sum + (page.budgetFailures ?? 0), 0),
    pages: pages.map(({ endedAt: _, ...page }) => page),
  };
}
