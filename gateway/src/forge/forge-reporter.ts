import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import {
  commitStatuses,
  compareViewLink,
  formatApiDateTime,
  forgeClient,
  reportComment,
  reportMarker,
  reportToForge,
  storedChecksReport,
  type ChangeReport,
  type Fetch,
  type ForgeOutcome,
} from '@perfwatch/common';
import type { SecretBox } from '../accounts/secret-box.ts';
import { retryDelayMs, type RetryPolicy } from '../alerts/webhook-sender.ts';
import type { ProjectRecord, ProjectsStore } from '../projects/store/projects-store.ts';
import { auditSummaryOf } from '../snapshots/audit-view.ts';
import { findSides } from '../snapshots/compare-sides.ts';
import { compareSnapshots, storedCellAudits } from '../snapshots/compare-view.ts';
import type { HeavyReads } from '../snapshots/heavy-reads.ts';
import type { SnapshotReadsStore } from '../snapshots/store/snapshots-store.ts';
import type { UpdateRecord, UpdatesStore } from '../updates/store/updates-store.ts';
import { openForgeToken } from './forge-link.ts';
import type { ForgeEventRecord, ForgeLinkRecord, ForgeStore } from './store/forge-store.ts';

export interface ForgeReporterDeps {
  store: Pick<
    ForgeStore,
    | 'listUnreportedForgeEvents'
    | 'claimForgeEvent'
    | 'deferForgeEvent'
    | 'markForgeEventReported'
    | 'recordForgeReportFailure'
    | 'findForgeLink'
  > &
    Pick<UpdatesStore, 'findUpdate'> &
    Pick<ProjectsStore, 'listProjects'> &
    Pick<SnapshotReadsStore, 'findSnapshotCells' | 'listSnapshots'>;
  secrets: SecretBox;
  reads: HeavyReads;
  /** Where users reach the dashboard (PUBLIC_URL): the statuses' links. */
  publicUrl: string;
  /** Requests to forges, through the same address rules as webhooks (forge-fetch.ts). */
  fetch: Fetch;
  logger: Logger;
  retry: RetryPolicy;
  /** How long an event whose preview is still being measured is left before it is looked at again. */
  waitingMs: number;
  now?: () => Date;
}

/** Events looked at per pass: each is a few forge requests. */
const BATCH = 20;
/** The soonest a forge's rate limit is tried again, whatever time it names. */
const MIN_RETRY_MS = 1_000;
/** How long a claimed event is this gateway's to report: far beyond a report's few requests. */
const CLAIM_MS = 5 * 60_000;

/** Whether a report's failures are worth trying again (the forge busy or limiting), or final. */
const retryable = (outcome: ForgeOutcome) => outcome.kind === 'rate-limited' || outcome.kind === 'unavailable';

type Resolved = { link: ForgeLinkRecord; linked: ProjectRecord; preview: ProjectRecord; update: UpdateRecord };

/** The link, both projects and the update of an event; null while there is nothing to report yet. */
async function resolveEvent(deps: ForgeReporterDeps, event: ForgeEventRecord): Promise<Resolved | string | null> {
  const link = await deps.store.findForgeLink(event.linkProjectId);
  if (!link) return 'the project is no longer linked to a repository';
  if (!event.updateId) return null;
  const update = await deps.store.findUpdate(link.userId, event.updateId);
  if (!update) return 'the preview update is gone';
  if (update.status !== 'done' && update.status !== 'failed') return null;
  const projects = await deps.store.listProjects(link.userId);
  const linked = projects.find((p) => p.id === event.linkProjectId);
  const preview = projects.find((p) => p.id === event.previewProjectId);
  if (!linked || !preview) return 'the linked or the preview project is gone';
  return { link, linked, preview, update };
}

/** The preview's snapshot beside the linked project's latest not from a pull request. */
async function changeReport(deps: ForgeReporterDeps, resolved: Resolved): Promise<ChangeReport> {
  const { linked, preview, update } = resolved;
  const date = update.date ? formatApiDateTime(update.date) : formatApiDateTime(update.updatedAt);
  const base = { url: preview.url, baseUrl: linked.url };
  const link =
    (from: string, to: string = date) =>
    (cell?: Parameters<ChangeReport['link']>[0]) =>
      compareViewLink(deps.publicUrl, { ...base, from, to, ...cell });
  const snapshot = update.date ? await deps.store.findSnapshotCells(preview.id, update.date, {}) : null;
  if (!snapshot) {
    const reason = update.reason ?? 'the update stored no snapshot';
    const missing = update.devices.flatMap((device) =>
      update.locations.map((location) => ({ device, location, reason })),
    );
    return {
      ...base,
      date,
      result: { missing },
      budgets: { pass: false, cells: [] },
      comparison: { unavailable: `the preview was not measured: ${reason}` },
      revision: update.revision,
      // No snapshot at this date: the link shows the preview's latest beside the base's.
      link: link('latest', 'latest'),
    };
  }
  const result = auditSummaryOf(snapshot, preview);
  const sides = await findSides(deps.store, {
    head: preview,
    base: linked,
    from: 'latest',
    to: snapshot.date,
    filter: {},
    baseBranch: resolved.link.defaultBranch,
  });
  const comparison: ChangeReport['comparison'] = sides.found
    ? {
        baseUrl: linked.url,
        compared: await deps.reads.run(() => compareSnapshots(base, sides.from, sides.to, storedCellAudits)),
      }
    : { unavailable: sides.errors.join('; ') || sides.message };
  const from = 'compared' in comparison ? comparison.compared.from : 'latest';
  return {
    ...base,
    date,
    result,
    budgets: storedChecksReport(result),
    comparison,
    revision: snapshot.revision,
    link: link(from),
  };
}

/** Reports one event to its forge; what to record of it. */
async function reportEvent(
  deps: ForgeReporterDeps,
  event: ForgeEventRecord,
): Promise<'waiting' | ForgeOutcome[] | string> {
  const resolved = await resolveEvent(deps, event);
  if (resolved === null) return 'waiting';
  const now = deps.now?.() ?? new Date();
  // Claimed only once there is something to report, so a claim never delays a report.
  if (!(await deps.store.claimForgeEvent(event, now, new Date(now.getTime() + CLAIM_MS)))) return 'waiting';
  if (typeof resolved === 'string') return resolved;
  const report = await changeReport(deps, resolved);
  const { link, linked } = resolved;
  const client = forgeClient(
    {
      forge: link.forge,
      apiUrl: link.apiUrl,
      repository: link.repository,
      token: openForgeToken(deps.secrets, linked, link),
    },
    deps.fetch,
  );
  const commit = event.revision.commit;
  if (!commit) return 'the event named no commit';
  return reportToForge(client, {
    commit,
    pullRequest: event.revision.pullRequest,
    statuses: commitStatuses(report),
    comment: reportComment(report),
    marker: reportMarker(report.baseUrl),
  });
}

/**
 * One pass of the reporter: every event whose preview update has ended is reported to its forge
 * (statuses and the pull request's comment, as `perfwatch update --report` does). A forge that
 * limits or does not answer is tried again later (its Retry-After, else doubling), until the
 * retry policy gives up; a refusal for any other reason is final and kept as the event's error.
 */
async function reportDueForgeEvents(deps: ForgeReporterDeps): Promise<number> {
  const now = deps.now ?? (() => new Date());
  const events = await deps.store.listUnreportedForgeEvents(BATCH, now());
  let reported = 0;
  for (const event of events) {
    let outcome: Awaited<ReturnType<typeof reportEvent>>;
    try {
      outcome = await reportEvent(deps, event);
    } catch (error) {
      outcome = [{ what: 'report', ok: false, detail: (error as Error).message, kind: 'unavailable' }];
    }
    if (outcome === 'waiting') {
      // Looked at again a little later: the events behind it in the list are reached meanwhile.
      await deps.store.deferForgeEvent(event.key, new Date(now().getTime() + deps.waitingMs));
      continue;
    }
    const failures = typeof outcome === 'string' ? [] : outcome.filter((o) => !o.ok);
    const final = typeof outcome === 'string' ? outcome : failures.map((f) => f.detail).join('; ') || null;
    const retry = failures.find(retryable);
    const giveUpAt = event.receivedAt.getTime() + deps.retry.giveUpAfterMs;
    // A forge's own time, but never in the past (a clock ahead of ours): not a retry every poll.
    const nextAttemptAt = retry?.retryAt
      ? new Date(Math.max(retry.retryAt.getTime(), now().getTime() + MIN_RETRY_MS))
      : new Date(now().getTime() + retryDelayMs(event.reportAttempts + 1, deps.retry));
    if (retry && nextAttemptAt.getTime() < giveUpAt) {
      await deps.store.recordForgeReportFailure(event.key, retry.detail, nextAttemptAt);
      deps.logger.warn(
        { event: event.key, forge: event.forge, nextAttemptAt },
        `forge report deferred: ${retry.detail}`,
      );
      continue;
    }
    if (final) await deps.store.recordForgeReportFailure(event.key, final, now());
    await deps.store.markForgeEventReported(event.key, now());
    reported += 1;
    deps.logger.info({ event: event.key, forge: event.forge, failed: final ?? undefined }, 'forge report sent');
  }
  return reported;
}

/** Runs reportDueForgeEvents every `pollMs` (after each pass ends, so passes never overlap) until stopped. */
export function startForgeReporter(deps: ForgeReporterDeps, pollMs: number): { stop(): Promise<void> } {
  const stopping = new AbortController();
  const loop = (async () => {
    while (!stopping.signal.aborted) {
      await reportDueForgeEvents(deps).catch((error: Error) =>
        deps.logger.error({ err: error.message }, 'forge reporter pass failed'),
      );
      await sleep(pollMs, undefined, { signal: stopping.signal }).catch(() => undefined);
    }
  })();
  return {
    async stop() {
      stopping.abort();
      await loop;
    },
  };
}
