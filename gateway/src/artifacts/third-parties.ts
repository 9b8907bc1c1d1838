import { z } from 'zod';
import type { ThirdPartySummary } from '@perfwatch/common';

/**
 * The cost of each entity (third party, and the first party) of one Lighthouse 13 result.
 * Lighthouse 13 dropped `third-party-summary`; its `third-parties-insight` gives the third
 * parties' transfer size and main-thread time, but neither blocking time nor request counts, so
 * those come from `long-tasks` and `network-requests`, attributed by Lighthouse's own entity
 * classification (the result's `entities` and each request's `entity`).
 */

/** A long task's time beyond this is what blocks input (the definition of Total Blocking Time). */
const BLOCKING_THRESHOLD_MS = 50;

const num = z.number().finite().nonnegative().catch(0);
const itemsOf = z
  .object({ details: z.object({ items: z.array(z.unknown()) }) })
  .optional()
  .catch(undefined);

const resultSchema = z.object({
  entities: z
    .array(z.unknown())
    .catch([])
    .default([])
    .transform((items) => parsedItems(items, entitySchema)),
  audits: z
    .object({
      'third-parties-insight': itemsOf,
      'network-requests': itemsOf,
      'long-tasks': itemsOf,
      'bootup-time': itemsOf,
    })
    .catch({}),
});
const entitySchema = z.object({
  name: z.string(),
  isFirstParty: z.boolean().catch(false).default(false),
  origins: z.array(z.string()).catch([]).default([]),
});
const insightItemSchema = z.object({ entity: z.string(), transferSize: num, mainThreadTime: num });
const requestSchema = z.object({
  url: z.string(),
  entity: z.string().optional().catch(undefined),
  resourceType: z.string().optional().catch(undefined),
  transferSize: num,
});
const longTaskSchema = z.object({ url: z.string(), duration: num });
const bootupSchema = z.object({ url: z.string(), total: num });

/** Each item that parses; one odd item is left out, never the whole table. */
function parsedItems<T>(items: unknown[] | undefined, schema: z.ZodType<T>): T[] {
  return (items ?? []).flatMap((item) => {
    const parsed = schema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  });
}

function originOf(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

type Entity = z.infer<typeof entitySchema>;

/** URL → entity: the request's own `entity` first (exact), else the entity owning its origin. */
function entityResolver(entities: Entity[], requests: z.infer<typeof requestSchema>[]): (url: string) => string | null {
  const byUrl = new Map(requests.flatMap((r) => (r.entity ? [[r.url, r.entity] as const] : [])));
  const byOrigin = new Map(entities.flatMap((e) => e.origins.map((origin) => [origin, e.name] as const)));
  return (url) => byUrl.get(url) ?? byOrigin.get(originOf(url) ?? '') ?? null;
}

/**
 * The entities Lighthouse marks first party; when it marks none (a result whose `entities` were
 * lost or are older than the classification), the page's own document's entity.
 */
function firstPartiesOf(entities: Entity[], requests: z.infer<typeof requestSchema>[]): Set<string> {
  const marked = entities.filter((e) => e.isFirstParty).map((e) => e.name);
  const document = requests.find((r) => r.resourceType === 'Document')?.entity;
  return new Set(marked.length > 0 || !document ? marked : [document]);
}

type Row = ThirdPartySummary & { measured: boolean };

export function thirdPartiesOf(lhr: unknown): ThirdPartySummary[] {
  const parsed = resultSchema.safeParse(lhr ?? {});
  if (!parsed.success) return [];
  const { entities, audits } = parsed.data;
  const insight = parsedItems(audits['third-parties-insight']?.details.items, insightItemSchema);
  const requests = parsedItems(audits['network-requests']?.details.items, requestSchema);
  const entityOf = entityResolver(entities, requests);
  const firstParties = firstPartiesOf(entities, requests);
  const rows = new Map<string, Row>();
  const row = (entity: string): Row => {
    let found = rows.get(entity);
    if (!found) {
      found = {
        entity,
        firstParty: firstParties.has(entity),
        transferSize: 0,
        mainThreadTime: 0,
        blockingTime: 0,
        requests: 0,
        measured: false,
      };
      rows.set(entity, found);
    }
    return found;
  };
  for (const item of insight)
    Object.assign(row(item.entity), {
      transferSize: item.transferSize,
      mainThreadTime: item.mainThreadTime,
      measured: true,
    });
  for (const request of requests) {
    if (!request.entity) continue;
    const r = row(request.entity);
    r.requests += 1;
    // The insight measured the third parties' bytes; the others' are their requests' sum.
    if (!r.measured) r.transferSize += request.transferSize;
  }
  addUnmeasuredMainThread(rows, entityOf, parsedItems(audits['bootup-time']?.details.items, bootupSchema));
  for (const task of parsedItems(audits['long-tasks']?.details.items, longTaskSchema)) {
    const entity = entityOf(task.url);
    if (entity) row(entity).blockingTime += Math.max(0, task.duration - BLOCKING_THRESHOLD_MS);
  }
  return [...rows.values()]
    .map(({ measured: _measured, ...summary }) => summary)
    .sort(
      (a, b) =>
        b.mainThreadTime - a.mainThreadTime || b.transferSize - a.transferSize || a.entity.localeCompare(b.entity),
    );
}

/**
 * The insight leaves out the first party; its main-thread time is the sum of `bootup-time`'s
 * per-script totals for its URLs (what Lighthouse's JavaScript execution time audit shows).
 */
function addUnmeasuredMainThread(
  rows: Map<string, Row>,
  entityOf: (url: string) => string | null,
  bootup: z.infer<typeof bootupSchema>[],
): void {
  for (const script of bootup) {
    const entity = entityOf(script.url);
    const r = entity ? rows.get(entity) : undefined;
    if (r && !r.measured) r.mainThreadTime += script.total;
  }
}
