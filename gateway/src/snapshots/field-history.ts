import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { DEVICES, FIELD_METRICS, type KpiRecord } from '@perfwatch/common';
import type { CruxHistoryClient, FieldWeek } from './crux/crux-history.ts';
import { wantsFieldData } from '../projects/project-settings.ts';
import type { KpisStore, ProjectRecord, ProjectsStore, SchedulingStore, StoreBase } from '../store/store.ts';

const noteKey = (projectId: string) => `field-history:${projectId}`;

/** CRUX records of one week: each field metric's p75 for the page and its origin, as the snapshots' own (`url_lcp_p75`). */
function weekKpis(page: FieldWeek | undefined, origin: FieldWeek | undefined): KpiRecord[] {
  return (['url', 'origin'] as const).flatMap((scope) => {
    const week = scope === 'url' ? page : origin;
    return Object.keys(FIELD_METRICS).map((name) => ({
      section: 'CRUX' as const,
      kpi: `${scope}_${name}_p75`,
      data: week?.p75[name as keyof typeof FIELD_METRICS] ?? 'NO_DATA',
    }));
  });
}

/** A project's last 25 weeks of field data, per device, as dated KPI records. */
async function historyOf(history: CruxHistoryClient, project: ProjectRecord) {
  const rows = [];
  for (const device of DEVICES) {
    const [page, origin] = await Promise.all([
      history.history({ url: project.url }, device),
      history.history({ origin: new URL(project.url).origin }, device),
    ]);
    const dates = [...new Set([...page, ...origin].map((w) => w.lastDate.getTime()))].sort((a, b) => a - b);
    for (const date of dates) {
      rows.push({
        date: new Date(date),
        device,
        kpis: weekKpis(
          page.find((w) => w.lastDate.getTime() === date),
          origin.find((w) => w.lastDate.getTime() === date),
        ),
      });
    }
  }
  return rows;
}

/**
 * Back-fills each project's field data once, after it is added: the CrUX History API's weeks
 * before perfwatch measured it, so the trend of field p75 does not start empty. A project is
 * marked done (a store note) once its history is stored; one the API could not answer for is
 * tried again on the next pass.
 */
export async function backfillFieldHistory({
  store,
  history,
  logger,
}: {
  store: Pick<ProjectsStore, 'listProjects'> &
    Pick<KpisStore, 'saveFieldHistory'> &
    Pick<StoreBase, 'readNote' | 'writeNote'>;
  history: CruxHistoryClient;
  logger: Logger;
}): Promise<number> {
  let filled = 0;
  for (const project of await store.listProjects()) {
    // Opted out of field data: left without its note, so opting in later back-fills it.
    if (!wantsFieldData(project) || (await store.readNote(noteKey(project.id)))) continue;
    try {
      const rows = await historyOf(history, project);
      await store.saveFieldHistory(project, rows);
      await store.writeNote(noteKey(project.id), new Date().toISOString());
      logger.info({ target: { url: project.url }, weeks: rows.length }, 'field-data history back-filled from CrUX');
      filled += 1;
    } catch (error) {
      logger.warn(
        { target: { url: project.url }, err: { message: (error as Error).message } },
        'could not back-fill field-data history; trying again later',
      );
    }
  }
  return filled;
}

/** Looks for projects without their field history every `everyMs`, on the replica holding the lease. */
export function startFieldHistory({
  store,
  history,
  logger,
  holder,
  everyMs,
}: {
  store: Pick<ProjectsStore, 'listProjects'> &
    Pick<KpisStore, 'saveFieldHistory'> &
    Pick<StoreBase, 'readNote' | 'writeNote'> &
    Pick<SchedulingStore, 'acquireLease'>;
  history: CruxHistoryClient;
  logger: Logger;
  holder: string;
  everyMs: number;
}) {
  const stopped = new AbortController();
  const loop = (async () => {
    while (!stopped.signal.aborted) {
      try {
        if (await store.acquireLease('field-history', holder, everyMs * 3))
          await backfillFieldHistory({ store, history, logger });
      } catch (error) {
        logger.warn({ err: { message: (error as Error).message } }, 'field-history pass failed; trying again');
      }
      await sleep(everyMs, undefined, { signal: stopped.signal }).catch(() => undefined);
    }
  })();
  return {
    async stop() {
      stopped.abort();
      await loop;
    },
  };
}
