import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatApiDateTime, type ThirdPartySummary } from '@perfwatch/common';
import type { ProjectRecord } from '@perfwatch/gateway';
import { createFsArtifactStore } from '../../gateway/src/artifacts/store/fs-artifact-store.ts';
import {
  AD_SCRIPT,
  bigPageLines,
  requestLinesOf,
  requestsNdjson,
  seedArtifactSnapshot,
  shopResult,
} from '../support/artifact-snapshots.ts';
import { launchBrowser, watchedPage } from '../support/browser.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

// The snapshot and compare views of a cell's artifacts (issue 35), in a real Chromium against a
// real gateway whose fs artifact store holds what an update would have put there: snapshots
// seeded with their cells' artifact states, and the requests NDJSON and traces gzipped under the
// gateway's own keys. No Lighthouse: the lines come from a real result's network-requests.

const ARTEFACTS = join(import.meta.dirname, '../../test-results/dashboard');
const SHOP = 'https://shop.example/';
const HERO = 'http://fixture.test/assets/hero.svg';
const BIG_PAGE = { requests: 5_200, kept: 5_000 };
const DOWN = 'the artifact store was down: connect ECONNREFUSED 127.0.0.1:8333';
const DAY = 86_400_000;
const TRACE = { traceEvents: [{ name: 'TracingStartedInBrowser', ph: 'I', ts: 1, pid: 1, tid: 1 }], metadata: {} };

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let artifactDir: string;
let token: string;
let browser: Browser;
let page: Page;
const problems: string[] = [];
/** The snapshots' dates as the API names them: one past retention, then two within it. */
const dates = { expired: '', from: '', to: '' };
/** The request lines stored for mobile in London, by snapshot. */
const stored: Record<'from' | 'to', object[]> = { from: [], to: [] };

/** A date `days` ago, to the second. */
const daysAgo = (days: number) => new Date(Math.floor((Date.now() - days * DAY) / 1000) * 1000);

async function seed(project: ProjectRecord): Promise<void> {
  const deps = { store: gateway.store, artifacts: createFsArtifactStore({ dir: artifactDir }) };
  const trace = { text: JSON.stringify(TRACE) };
  const at = { expired: daysAgo(40), from: daysAgo(2), to: daysAgo(1) };
  stored.from = requestLinesOf(shopResult('mobile', false), HERO);
  stored.to = requestLinesOf(shopResult('mobile', true), HERO);
  // Kept once, 40 days ago: past the 30 days' retention, its files already removed.
  await seedArtifactSnapshot(deps, project, {
    updateId: 'expired-update',
    date: at.expired,
    cells: [
      {
        device: 'mobile',
        location: 'london',
        lhr: shopResult('mobile', false),
        artifacts: {
          requests: { state: { state: 'stored', bytes: 900 } },
          trace: { state: { state: 'stored', bytes: 90 } },
        },
      },
    ],
  });
  await seedArtifactSnapshot(deps, project, {
    updateId: 'from-update',
    date: at.from,
    cells: [
      {
        device: 'mobile',
        location: 'london',
        lhr: shopResult('mobile', false),
        artifacts: { requests: { text: requestsNdjson(stored.from) }, trace },
      },
    ],
  });
  await seedArtifactSnapshot(deps, project, {
    updateId: 'to-update',
    date: at.to,
    cells: [
      {
        device: 'mobile',
        location: 'london',
        lhr: shopResult('mobile', true),
        artifacts: { requests: { text: requestsNdjson(stored.to) }, trace },
      },
      {
        device: 'mobile',
        location: 'frankfurt',
        lhr: shopResult('mobile', true),
        artifacts: {
          requests: { state: { state: 'missing', reason: DOWN } },
          trace: { state: { state: 'missing', reason: DOWN } },
        },
      },
      {
        device: 'desktop',
        location: 'london',
        lhr: shopResult('desktop', false),
        artifacts: {
          requests: { text: requestsNdjson(bigPageLines(BIG_PAGE.kept), BIG_PAGE.requests), truncated: true },
        },
      },
    ],
  });
  for (const name of ['expired', 'from', 'to'] as const) dates[name] = formatApiDateTime(at[name]);
}

beforeAll(async () => {
  await mkdir(ARTEFACTS, { recursive: true });
  artifactDir = await mkdtemp(join(tmpdir(), 'perfwatch-dashboard-artifacts-'));
  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    config: { ARTIFACT_STORE: 'fs', ARTIFACT_DIR: artifactDir, ARTIFACT_RETENTION_DAYS: 30 },
  });
  ({ token } = await gateway.admin.createUser('ada'));
  await seed(await gateway.admin.addProject('ada', SHOP, { locations: ['london', 'frankfurt'] }));
  browser = await launchBrowser();
  page = await watchedPage(browser, problems);
  await page.goto(`${gateway.url}/`);
  await page.fill('#token', token);
  await page.click('#sign-in button[type=submit]');
  await page.waitForSelector('.projects');
}, 90_000);

afterAll(async () => {
  await browser?.close();
  await gateway?.stop();
  await nats?.dispose();
  if (artifactDir) await rm(artifactDir, { recursive: true, force: true });
});

/** A GET of /v1 as the dashboard's user, its JSON. */
async function apiGet<T>(path: string, params: Record<string, string>): Promise<T> {
  const res = await fetch(`${gateway.url}/v1/${path}?${new URLSearchParams(params)}`, {
    headers: { Authorization: token },
  });
  expect(res.status).toBe(200);
  return (await res.json()) as T;
}

const card = (device: string, location: string) => `article.cell[data-device="${device}"][data-location="${location}"]`;

/** The snapshot view of `date`, each cell's artifacts section read to the end. */
async function openSnapshot(date: string): Promise<void> {
  await page.goto(`${gateway.url}/#/snapshot?${new URLSearchParams({ url: SHOP, date })}`);
  // The view of that snapshot (the one before stays until it is drawn), every section
  // read to its end (or to why it could not be).
  await page.locator('h1', { hasText: `Snapshot ${date} UTC` }).waitFor();
  await page.waitForSelector('section.artifacts[data-loaded="false"]', { state: 'detached' });
}

describe("the snapshot view's artifacts", () => {
  it('draws a bar per stored request, grouped by entity, the LCP request marked', async () => {
    await openSnapshot(dates.to);
    const at = card('mobile', 'london');
    const bars = await page.$$eval(`${at} svg.waterfall g.request`, (gs) =>
      gs.map((g) => ({
        url: g.getAttribute('data-url'),
        entity: g.getAttribute('data-entity'),
        lcp: g.getAttribute('data-lcp'),
      })),
    );
    expect(await page.locator(`${at} svg.waterfall rect.bar`).count()).toBe(stored.to.length);
    expect(bars.map((b) => b.url).sort()).toEqual(stored.to.map((line) => (line as { url: string }).url).sort());
    expect(bars.filter((b) => b.lcp === 'true')).toEqual([{ url: HERO, entity: '127.0.0.1', lcp: 'true' }]);
    expect(await page.getAttribute(`${at} g.request[data-lcp="true"] rect.bar`, 'class')).toContain('lcp');
    expect(await page.textContent(`${at} g.request[data-lcp="true"] .lcp-label`)).toBe('LCP');
    // The page's own requests first, the third party after; each bar carries its numbers.
    const groups = await page.$$eval(`${at} svg.waterfall g.entity-group`, (gs) =>
      gs.map((g) => g.getAttribute('data-entity')),
    );
    expect(groups).toEqual(['127.0.0.1', AD_SCRIPT.entity]);
    const ad = page.locator(`${at} g.request[data-url="${AD_SCRIPT.url}"]`);
    expect(await ad.getAttribute('data-bytes')).toBe(String(AD_SCRIPT.transferSize));
    expect(await ad.getAttribute('data-start')).toBe('131.5');
    expect(await ad.getAttribute('data-end')).toBe('412.25');
    expect(await ad.locator('title').textContent()).toContain(AD_SCRIPT.url);
    expect(await page.textContent(`${at} .lcp-url`)).toBe(HERO);
    await page.screenshot({ path: join(ARTEFACTS, 'artifacts-snapshot.png'), fullPage: true });
    await page
      .locator(`${at} figure.waterfall-figure`)
      .screenshot({ path: join(ARTEFACTS, 'artifacts-waterfall.png') });
    expect(problems).toEqual([]);
  });

  it("lists each third party's bytes, main-thread and blocking time as /v1/artifacts gives them", async () => {
    const params = { url: SHOP, date: dates.to, device: 'mobile', location: 'london', kind: 'third-parties' };
    const { entities } = await apiGet<{ entities: ThirdPartySummary[] }>('artifacts', params);
    await openSnapshot(dates.to);
    expect(entities.find((e) => e.entity === AD_SCRIPT.entity)).toMatchObject({
      firstParty: false,
      transferSize: AD_SCRIPT.transferSize,
      mainThreadTime: AD_SCRIPT.mainThreadTime,
      blockingTime: AD_SCRIPT.longTaskMs - 50,
      requests: 1,
    });
    const rows = await page.$$eval(`${card('mobile', 'london')} table.third-parties tbody tr`, (trs) =>
      trs.map((tr) => {
        const value = (field: string) =>
          Number(tr.querySelector(`td[data-field="${field}"]`)!.getAttribute('data-value'));
        return {
          entity: tr.getAttribute('data-entity'),
          firstParty: tr.getAttribute('data-first-party') === 'true',
          transferSize: value('transferSize'),
          mainThreadTime: value('mainThreadTime'),
          blockingTime: value('blockingTime'),
          requests: value('requests'),
        };
      }),
    );
    expect(rows).toEqual(entities);
    const adRow = `${card('mobile', 'london')} table.third-parties tr[data-entity="${AD_SCRIPT.entity}"]`;
    expect(await page.textContent(`${adRow} td[data-field="transferSize"]`)).toBe('47.1 KiB');
    expect(await page.textContent(`${adRow} td[data-field="blockingTime"]`)).toBe('130 ms');
    expect(problems).toEqual([]);
  });

  it('says how long each artifact is kept, and the trace downloads for DevTools or Perfetto', async () => {
    const audit = await apiGet<{ mobile: Record<string, { artifacts: { requests: { expires: string } } }> }>('audit', {
      url: SHOP,
      date: dates.to,
    });
    const { expires } = audit.mobile['london']!.artifacts.requests;
    await openSnapshot(dates.to);
    const at = card('mobile', 'london');
    const requests = page.locator(`${at} li[data-artifact="requests"]`);
    expect(await requests.getAttribute('data-state')).toBe('stored');
    expect(await requests.textContent()).toContain(`kept until ${expires} UTC`);
    const link = page.locator(`${at} a[data-artifact-link="trace"]`);
    expect(await link.getAttribute('title')).toMatch(/Chrome DevTools.*Perfetto/);
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    expect(download.suggestedFilename()).toMatch(/\.json$/);
    expect(JSON.parse(await readFile((await download.path())!, 'utf8'))).toEqual(TRACE);
    expect(problems).toEqual([]);
  });

  it('a missing artifact says why, and an expired one says it expired', async () => {
    await openSnapshot(dates.to);
    const missing = card('mobile', 'frankfurt');
    expect(await page.getAttribute(`${missing} li[data-artifact="requests"]`, 'data-state')).toBe('missing');
    expect(await page.textContent(`${missing} li[data-artifact="trace"]`)).toBe(`Trace: missing: ${DOWN}`);
    expect(await page.textContent(`${missing} .waterfall-area`)).toBe(
      `No request waterfall: the requests are missing: ${DOWN}.`,
    );
    expect(await page.$(`${missing} svg.waterfall`)).toBeNull();
    expect(await page.$(`${missing} a[data-artifact-link="trace"]`)).toBeNull();

    await openSnapshot(dates.expired);
    const expired = card('mobile', 'london');
    expect(await page.getAttribute(`${expired} li[data-artifact="requests"]`, 'data-state')).toBe('expired');
    expect(await page.textContent(`${expired} .waterfall-area`)).toMatch(
      /^No request waterfall: the requests are expired on \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d UTC\.$/,
    );
    expect(await page.$(`${expired} svg.waterfall`)).toBeNull();
    expect(await page.$(`${expired} a[data-artifact-link="trace"]`)).toBeNull();
    expect(problems).toEqual([]);
  });

  it('a page of 5,000 requests opens collapsed, and "show all" draws every stored request', async () => {
    await openSnapshot(dates.to);
    const at = card('desktop', 'london');
    expect(await page.textContent(`${at} [data-note="truncated"]`)).toBe(
      `Cut at its size bound: ${BIG_PAGE.kept} of the run's ${BIG_PAGE.requests} requests were kept.`,
    );
    const collapsed = await page.locator(`${at} svg.waterfall rect.bar`).count();
    expect(collapsed).toBeLessThan(300);
    // Collapsed, the LCP request is still drawn.
    expect(await page.locator(`${at} g.request[data-lcp="true"]`).count()).toBe(1);
    const started = Date.now();
    await page.click(`${at} button.show-all`);
    expect(await page.locator(`${at} svg.waterfall rect.bar`).count()).toBe(BIG_PAGE.kept);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await page.locator(`${at} g.entity-group`).count()).toBe(8);
    expect(await page.getAttribute(`${at} g.entity-group >> nth=0`, 'data-entity')).toBe('big.example');
    expect(problems).toEqual([]);
  });
});

describe('the compare view', () => {
  it("lists the third party's script added between the snapshots, and its cost", async () => {
    const params = { url: SHOP, from: dates.from, to: dates.to, device: 'mobile', location: 'london' };
    await page.goto(`${gateway.url}/#/compare?${new URLSearchParams(params)}`);
    await page.waitForSelector('table.compare');
    const at = card('mobile', 'london');
    const added = page.locator(`${at} li[data-change="added"][data-url="${AD_SCRIPT.url}"]`);
    expect(await added.getAttribute('data-entity')).toBe(AD_SCRIPT.entity);
    expect(await added.getAttribute('data-to-bytes')).toBe(String(AD_SCRIPT.transferSize));
    expect(await page.locator(`${at} li[data-change="added"]`).count()).toBe(1);
    const row = `${at} table.third-party-changes tr[data-entity="${AD_SCRIPT.entity}"]`;
    expect(await page.getAttribute(row, 'data-change')).toBe('added');
    expect(await page.getAttribute(`${row} td[data-field="transferSize"]`, 'data-to')).toBe(
      String(AD_SCRIPT.transferSize),
    );
    expect(await page.getAttribute(`${row} td[data-field="mainThreadTime"]`, 'data-to')).toBe(
      String(AD_SCRIPT.mainThreadTime),
    );
    expect(await page.getAttribute(`${row} td[data-field="blockingTime"]`, 'data-to')).toBe(
      String(AD_SCRIPT.longTaskMs - 50),
    );
    await page.screenshot({ path: join(ARTEFACTS, 'artifacts-compare.png'), fullPage: true });
    expect(problems).toEqual([]);
  });
});
