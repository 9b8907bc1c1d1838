import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '@perfwatch/agent';
import { createApiClient, type ApiClient } from '@perfwatch/client';
import { launchBrowser, watchedPage } from '../support/browser.ts';
import { startFakeCrux } from '../support/fake-crux.ts';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// The dashboard in a real Chromium (playwright-core driving Debian's chromium) against a real
// gateway, nats-server and MongoDB-wire server; agents answer with captured Lighthouse results
// and CrUX is a local fake, so the values on screen can be checked against the API's.

const ARTEFACTS = join(import.meta.dirname, '../../test-results/dashboard');
const SHOP = 'https://shop.example/';

type Lhr = {
  categories: Record<string, { score: number }>;
  audits: Record<string, { numericValue: number }>;
  finalDisplayedUrl: string;
};
/** The Lighthouse result of one cell, with the fields this test reads. */
const lhrOf = (cell: { lighthouse: object }) => cell.lighthouse as unknown as Lhr;

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let crux: Awaited<ReturnType<typeof startFakeCrux>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
const agents: Agent[] = [];
let token: string;
let client: ApiClient;
let browser: Browser;
let page: Page;
const problems: string[] = [];

beforeAll(async () => {
  await mkdir(ARTEFACTS, { recursive: true });
  nats = await isolatedNats();
  crux = await startFakeCrux();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    cruxEndpoint: crux.endpoint,
    config: { FIELD_HISTORY_EVERY_MS: 200 },
  });
  agentConn = await connect({ servers: nats.url });
  for (const location of ['london', 'tokyo'] as const)
    agents.push(
      startAgent({
        nc: agentConn,
        location,
        runner: fixtureRunner({ delayMs: 5 }),
        logger: silentLogger,
        agentId: location,
      }),
    );
  ({ token } = await gateway.admin.createUser('dana'));
  await gateway.admin.addProject('dana', SHOP, { locations: ['london', 'tokyo'], runs: 3 });
  await gateway.admin.addProject('dana', 'https://blog.example/', { locations: ['london'], runs: 1 });
  client = createApiClient({ server: gateway.url, token });
  // Three snapshots, a second apart at least, so the trend has a line.
  for (let i = 0; i < 3; i += 1) {
    await client.update({ url: SHOP });
    await new Promise((resolve) => setTimeout(resolve, 1_100));
  }
  browser = await launchBrowser();
  // Script errors and CSP violations show up in problems; the page must have none.
  page = await watchedPage(browser, problems);
}, 90_000);

afterAll(async () => {
  await browser?.close();
  for (const agent of agents) await agent.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await crux?.close();
  await nats?.dispose();
});

async function screenshot(name: string): Promise<void> {
  const path = join(ARTEFACTS, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  expect((await stat(path)).size).toBeGreaterThan(10_000);
}

describe('the API reference', () => {
  it('renders every operation in a browser under its Content-Security-Policy, with nothing sniffed', async () => {
    const docs = await browser.newPage();
    const violations: string[] = [];
    docs.on('pageerror', (error) => violations.push(`pageerror: ${error.message}`));
    docs.on('console', (message) => {
      if (message.type() === 'error') violations.push(`console: ${message.text()}`);
    });
    try {
      const response = await docs.goto(`${gateway.url}/v1/docs/`);
      expect(response!.headers()['content-security-policy']).toMatch(/script-src 'self';.*frame-ancestors 'none'/);
      expect(response!.headers()['x-content-type-options']).toBe('nosniff');
      await docs.waitForSelector('.opblock', { timeout: 20_000 });
      expect(await docs.$$eval('.opblock-summary-path', (paths) => paths.length)).toBeGreaterThan(10);
      expect(violations).toEqual([]);
    } finally {
      await docs.close();
    }
  });
});

describe('dashboard', () => {
  it("refuses a bad token and signs in with a good one, listing the user's projects", async () => {
    const response = await page.goto(`${gateway.url}/`);
    // Served by the gateway itself, scripts from its own origin only.
    expect(response!.headers()['content-security-policy']).toMatch(/script-src 'self';/);
    await page.fill('#token', 'pw_' + 'x'.repeat(43));
    await page.click('#sign-in button[type=submit]');
    await expect.poll(() => page.textContent('#sign-in .error')).toBe('That token is not valid.');
    // The browser logs the refused sign-in's 401; that one was the point.
    expect(problems.splice(0)).toEqual([
      'console: Failed to load resource: the server responded with a status of 401 (Unauthorized)',
    ]);

    await page.fill('#token', token);
    await page.click('#sign-in button[type=submit]');
    await page.waitForSelector('.project-link');
    expect(await page.$$eval('.project-link', (links) => links.map((a) => a.textContent))).toEqual([
      'https://blog.example/',
      SHOP,
    ]);
    await screenshot('projects');
    // The token is in the tab's session storage, never in the address.
    expect(page.url()).not.toContain(token);
  });

  it("shows a project's latest scores and trend plots with the stored values", async () => {
    // The project's field-data history, back-filled from the CrUX History API (the fake's 25 weeks
    // end on 2026-11-15), is in before the page is read.
    const range = {
      startDate: new Date(Date.now() - 29 * 86_400_000).toISOString().slice(0, 10),
      endDate: new Date().toISOString().slice(0, 10),
    };
    await expect
      .poll(
        async () =>
          (await client.overview({ ...range, sections: ['crux'] })).some(
            (r) => r.url === SHOP && r.kpi === 'url_lcp_p75' && r.date === '2026-11-15T00:00:00',
          ),
        { timeout: 10_000 },
      )
      .toBe(true);
    await page.click(`.project-link:text-is("${SHOP}")`);
    await page.waitForSelector('figure[data-kpi="performance"] circle');

    // Latest: every device and location of the latest snapshot, with its scores.
    const dates = await client.updates(SHOP);
    const latest = dates.mobile!.at(-1)!.date;
    const audit = await client.audit({ url: SHOP, date: latest });
    for (const device of ['mobile', 'desktop'] as const) {
      for (const location of ['london', 'tokyo'] as const) {
        const lhr = lhrOf(audit[device]![location]!);
        const row = `#latest tr[data-device="${device}"][data-location="${location}"]`;
        for (const category of ['performance', 'accessibility', 'seo']) {
          expect(await page.textContent(`${row} td[data-category="${category}"] .score`)).toBe(
            String(Math.round(lhr.categories[category]!.score * 100)),
          );
        }
        expect(await page.textContent(`${row} a`)).toBe(latest);
      }
    }

    // Trends: one point per snapshot and device/location, at the value /v1/overview has.
    const day = latest.slice(0, 10);
    const records = (await client.overview({ startDate: day, endDate: day, sections: ['lighthouse', 'crux'] })).filter(
      (r) => r.url === SHOP,
    );
    const performance = records.filter((r) => r.section === 'LIGHTHOUSE' && r.kpi === 'performance');
    expect(performance).toHaveLength(3 * 4);
    const plotted = await page.$$eval('figure[data-kpi="performance"] circle', (circles) =>
      circles.map(
        (c) => `${c.getAttribute('data-series')} ${c.getAttribute('data-date')} ${c.getAttribute('data-value')}`,
      ),
    );
    expect(plotted.sort()).toEqual(
      performance.map((r) => `${r.device}/${r.location} ${r.date} ${(r.data as { score: number }).score}`).sort(),
    );
    // The lab points (field p75 lines share the FCP plot, checked below with the other field lines).
    const fcp = await page.$$eval('figure[data-kpi="fcp"] circle', (circles) =>
      circles
        .filter((c) => !c.getAttribute('data-series')!.startsWith('field'))
        .map((c) => Number(c.getAttribute('data-value'))),
    );
    expect(fcp.sort((a, b) => a - b)).toEqual(
      performance.map((r) => (r.data as { fcp: number }).fcp).sort((a, b) => a - b),
    );
    // Mobile and desktop runs differ: the plotted values come from the records, not a constant.
    expect(new Set(fcp).size).toBeGreaterThan(1);
    // The lab Core Web Vitals, each point at the record's value, over its good / needs improvement / poor bands.
    for (const kpi of ['lcp', 'tbt', 'cls'] as const) {
      const points = (
        await page.$$eval(`figure[data-kpi="${kpi}"] circle`, (circles) =>
          circles.map(
            (c) => `${c.getAttribute('data-series')} ${c.getAttribute('data-date')} ${c.getAttribute('data-value')}`,
          ),
        )
      ).filter((p) => !p.startsWith('field'));
      expect(points.sort(), kpi).toEqual(
        performance.map((r) => `${r.device}/${r.location} ${r.date} ${(r.data as Record<string, number>)[kpi]}`).sort(),
      );
      expect(
        await page.$$eval(`figure[data-kpi="${kpi}"] rect.band`, (rects) =>
          rects.map((r) => r.getAttribute('data-band')),
        ),
        kpi,
      ).toEqual(['good', 'needs-improvement', 'poor']);
    }
    expect(await page.textContent('figure[data-kpi="lcp"] figcaption')).toBe('Largest Contentful Paint');
    // Field data beside them: CrUX's p75 per device (not per location), from the CRUX records of
    // the plotted 30 days: the snapshots' own and the weeks back-filled from the History API.
    const month = (await client.overview({ ...range, sections: ['crux'] })).filter((r) => r.url === SHOP);
    expect(month.some((r) => r.kpi === 'url_lcp_p75' && r.date === '2026-11-15T00:00:00' && r.data === '2180')).toBe(
      true,
    );
    for (const kpi of ['lcp', 'cls', 'inp', 'fcp'] as const) {
      const field = month.filter((r) => r.section === 'CRUX' && r.kpi === `url_${kpi}_p75` && r.data !== 'NO_DATA');
      expect(field.length, kpi).toBeGreaterThan(0);
      const expected = [...new Set(field.map((r) => `field p75 · ${r.device} ${r.date} ${Number(r.data)}`))].sort();
      const shown = (
        await page.$$eval(`figure[data-kpi="${kpi}"] circle`, (circles) =>
          circles.map(
            (c) => `${c.getAttribute('data-series')} ${c.getAttribute('data-date')} ${c.getAttribute('data-value')}`,
          ),
        )
      ).filter((p) => p.startsWith('field'));
      expect(shown.sort(), kpi).toEqual(expected);
    }

    // CrUX: the fake CrUX answers a passing assessment for page and origin.
    const cruxRecords = records.filter((r) => r.section === 'CRUX' && r.kpi === 'url');
    expect(cruxRecords).toHaveLength(12);
    expect(await page.$$eval('table.crux td[data-kpi="url"]', (cells) => cells.map((c) => c.textContent))).toEqual(
      cruxRecords.map((r) => r.data),
    );
    // …and plotted over time, a mark per snapshot and device/location.
    const marks = await page.$$eval('figure[data-kpi="crux-url"] rect', (rects) =>
      rects.map(
        (r) => `${r.getAttribute('data-series')} ${r.getAttribute('data-date')} ${r.getAttribute('data-value')}`,
      ),
    );
    expect(marks.sort()).toEqual(
      cruxRecords.map((r) => `${r.device}/${r.location} ${r.date} ${String(r.data)}`).sort(),
    );
    await screenshot('project');
  });

  it("opens a snapshot with every cell's scores, metrics and runs, and the full Lighthouse report", async () => {
    const latest = (await client.updates(SHOP)).mobile!.at(-1)!.date;
    await page.click(`#latest tr[data-device="mobile"][data-location="london"] a`);
    await page.waitForSelector('article.cell[data-device="mobile"][data-location="london"]');
    const audit = await client.audit({ url: SHOP, date: latest, device: 'mobile', location: ['london'] });
    const cell = audit.mobile!.london!;
    const lhr = lhrOf(cell);
    const card = 'article.cell[data-device="mobile"][data-location="london"]';
    expect(await page.textContent(`${card} [data-category="performance"] .score`)).toBe(
      String(Math.round(lhr.categories['performance']!.score * 100)),
    );
    expect(await page.textContent(`${card} dd[data-metric="cumulative-layout-shift"]`)).toBe(
      lhr.audits['cumulative-layout-shift']!.numericValue.toFixed(3),
    );
    expect(await page.$$eval(`${card} table.runs tbody tr`, (rows) => rows.length)).toBe(3);
    expect(await page.textContent(`${card} table.runs tr.median .run-number`)).toBe(`${cell.median} (median)`);
    expect(await page.$$eval('article.cell', (cards) => cards.length)).toBe(4);
    await screenshot('snapshot');

    await page.click(`${card} a.button`);
    // Lighthouse's own renderer: its performance gauge shows the stored score.
    const gauges = '.lighthouse-report a.lh-gauge__wrapper[href="#performance"] .lh-gauge__percentage';
    await page.waitForSelector(gauges, { state: 'attached', timeout: 20_000 });
    const shown = await page.$$eval(gauges, (elements) => elements.map((e) => e.textContent));
    expect(shown.length).toBeGreaterThan(0);
    expect(new Set(shown)).toEqual(new Set([String(Math.round(lhr.categories['performance']!.score * 100))]));
    expect(await page.textContent('.lighthouse-report .lh-topbar__url')).toBe(lhr.finalDisplayedUrl);
    // Nothing that sends the result to a third party: no Viewer, no Gist, no Google-hosted treemap.
    expect(await page.$$('.lighthouse-report [data-action="save-json"]')).not.toHaveLength(0);
    expect(
      await page.$$('.lighthouse-report [data-action="open-viewer"], .lighthouse-report [data-action="save-gist"]'),
    ).toHaveLength(0);
    expect(
      await page.$$('.lighthouse-report .lh-report-icon--treemap, .lighthouse-report .lh-button--treemap'),
    ).toHaveLength(0);
    await screenshot('report');
    expect(problems).toEqual([]);
  });

  it('compares two picked snapshots with the differences and noise verdicts of /v1/compare', async () => {
    // A page that got slower: a Los Angeles agent whose runs after the first update's four load 500 ms later.
    agents.push(
      startAgent({
        nc: agentConn,
        location: 'los_angeles',
        runner: fixtureRunner({
          change: (lhr, n) => {
            if (n > 4) lhr.audits['largest-contentful-paint']!.numericValue! += 500;
          },
        }),
        logger: silentLogger,
        agentId: 'los-angeles',
      }),
    );
    const slower = 'https://slower.example/';
    await gateway.admin.addProject('dana', slower, { locations: ['los_angeles'], runs: 4 });
    await expect
      .poll(
        async () =>
          (await client.update({ url: slower, device: 'mobile' }).catch(() => null))?.mobile?.los_angeles ?? null,
        { timeout: 30_000, interval: 1_000 },
      )
      .not.toBeNull();
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    await client.update({ url: slower, device: 'mobile' });
    const dates = (await client.updates(slower)).mobile!.map((d) => d.date);
    const [from, to] = [dates[0]!, dates.at(-1)!];
    await page.goto(`${gateway.url}/#/project?${new URLSearchParams({ url: slower })}`);
    await page.waitForSelector('#compare select#compare-from');
    await page.selectOption('#compare-from', from);
    await page.selectOption('#compare-to', to);
    await page.click('#compare button[type=submit]');
    await page.waitForSelector('table.compare');
    expect(page.url()).toContain('#/compare?');
    const expected = await client.compare({ url: slower, from, to });
    expect(expected.cells).toHaveLength(1);
    const lcp = expected.cells[0]!.metrics.find((m) => m.metric === 'lcp')!;
    // 500 ms later, give or take which captured run each side's median is.
    expect(lcp.difference).toBeGreaterThan(400);
    // Four runs a side, every later one slower: beyond noise (p = 2/70).
    expect(lcp.significance).toMatchObject({ test: 'mann-whitney-u', beyondNoise: true });
    expect(await page.getAttribute(`article.cell tr[data-metric="lcp"]`, 'class')).toBe('beyond-noise');
    const ms = (v: number | null, signed = false) =>
      v === null ? '—' : `${signed && v > 0 ? '+' : ''}${Math.round(v)} ms`;
    for (const cell of expected.cells) {
      const card = `article.cell[data-device="${cell.device}"][data-location="${cell.location}"]`;
      for (const metric of cell.metrics.filter((m) => ['lcp', 'fcp', 'tbt'].includes(m.metric))) {
        const row = `${card} tr[data-metric="${metric.metric}"]`;
        expect(await page.textContent(`${row} td[data-side="from"]`)).toBe(ms(metric.from));
        expect(await page.textContent(`${row} td[data-side="to"]`)).toBe(ms(metric.to));
        expect(await page.textContent(`${row} td[data-side="difference"]`)).toBe(ms(metric.difference, true));
        const s = metric.significance;
        expect(s.test).toBe('mann-whitney-u');
        if (s.test === 'mann-whitney-u')
          expect(await page.textContent(`${row} td[data-side="noise"]`)).toBe(
            `${s.beyondNoise ? 'yes' : 'no'} (p = ${s.p.toFixed(3)})`,
          );
      }
    }
    await screenshot('compare');
    expect(problems).toEqual([]);
  });

  it('says which cell of a snapshot was not measured, and why', async () => {
    // São Paulo has no agent: the sync update answers with London and names São Paulo missing.
    const partial = 'https://partial.example/';
    await gateway.admin.addProject('dana', partial, { locations: ['london', 'sao_paulo'], runs: 1 });
    const result = await client.update({ url: partial, device: 'desktop' });
    expect(result.missing).toEqual([
      { device: 'desktop', location: 'sao_paulo', reason: expect.stringMatching(/^NO_RESPONDERS: /) },
    ]);
    const date = result.desktop!.london!.lighthouse.date;
    await page.goto(`${gateway.url}/#/snapshot?${new URLSearchParams({ url: partial, date })}`);
    const card = 'article.cell.missing[data-device="desktop"][data-location="sao_paulo"]';
    await page.waitForSelector(card);
    expect(await page.textContent(`${card} .missing-reason`)).toBe(`Not measured: ${result.missing![0]!.reason}`);
    expect(await page.$$eval('article.cell', (cards) => cards.length)).toBe(2);
    expect(problems).toEqual([]);
  });
  it("shows a snapshot's commit, branch and pull request, with a 'from pull request' badge on it and its trend points", async () => {
    const url = 'https://pr.example/';
    await gateway.admin.addProject('dana', url, { locations: ['london'], runs: 1 });
    const commit = '4b825dc642cb6eb9a060e54bf8d69288fbee4904';
    await client.update({ url, device: 'desktop' });
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const result = await client.update({ url, device: 'desktop', commit, branch: 'feature/hero', pullRequest: 12 });
    const date = result.desktop!.london!.lighthouse.date;
    expect(result.desktop!.london!.revision).toEqual({ commit, branch: 'feature/hero', pullRequest: 12 });

    await page.goto(`${gateway.url}/#/snapshot?${new URLSearchParams({ url, date })}`);
    await page.waitForSelector('.revision [data-commit]');
    expect(await page.textContent('.revision [data-commit]')).toBe(commit.slice(0, 7));
    expect(await page.getAttribute('.revision [data-commit]', 'title')).toBe(commit);
    expect(await page.textContent('.revision [data-branch]')).toBe('feature/hero');
    expect(await page.textContent('.revision')).toContain('PR #12');
    expect(await page.textContent('.revision .badge-pr')).toBe('from pull request');

    await page.goto(`${gateway.url}/#/project?${new URLSearchParams({ url })}`);
    await page.waitForSelector('figure[data-kpi="performance"] circle');
    // The snapshot list: the badge on the one from the pull request only.
    expect(await page.$$eval('ul.snapshots li .badge-pr', (badges) => badges.length)).toBe(1);
    expect(await page.textContent(`ul.snapshots li[data-date="${date}"] .badge-pr`)).toBe('from pull request');
    // The trend points: the pull request's point is marked and says its revision on hover.
    const points = await page.$$eval('figure[data-kpi="performance"] circle', (circles) =>
      circles.map((c) => ({
        date: c.getAttribute('data-date'),
        pr: c.getAttribute('data-pull-request'),
        marked: c.classList.contains('point-pr'),
        title: c.querySelector('title')!.textContent,
      })),
    );
    expect(points).toHaveLength(2);
    const fromPr = points.find((p) => p.date === date)!;
    expect(fromPr).toMatchObject({ pr: '12', marked: true });
    expect(fromPr.title).toContain(`commit ${commit}`);
    expect(fromPr.title).toContain('from pull request');
    expect(points.find((p) => p.date !== date)).toMatchObject({ pr: null, marked: false });
    await screenshot('revision');
    expect(problems).toEqual([]);
  });

  it('marks the runs it doubts, says why, and that the median was taken over reliable ones', async () => {
    // A Frankfurt agent with room for two runs at once, reporting calm conditions: the update's
    // two runs share it (the agent counts that), are suspect, and are measured again one by one.
    const conditions = {
      benchmarkIndex: 1000,
      baselineBenchmarkIndex: 1000,
      cpuMultiplier: 2.3,
      chromeVersion: '142.0.0.0',
      lighthouseVersion: '13.0.1',
    };
    agents.push(
      startAgent({
        nc: agentConn,
        location: 'frankfurt',
        capacity: 2,
        runner: fixtureRunner({ delayMs: 400, conditions }),
        logger: silentLogger,
        agentId: 'frankfurt-shared',
      }),
    );
    const shared = 'https://shared.example/';
    await gateway.admin.addProject('dana', shared, { locations: ['frankfurt'], runs: 2 });
    await expect
      .poll(
        async () =>
          (await client.update({ url: shared, device: 'desktop' }).catch(() => null))?.desktop?.frankfurt ?? null,
        { timeout: 30_000, interval: 1_000 },
      )
      .not.toBeNull();
    const date = (await client.updates(shared)).desktop!.at(-1)!.date;
    const cell = (await client.audit({ url: shared, date })).desktop!.frankfurt!;
    expect(cell.runs.map((r) => [r.verdict, r.retestOf ?? null])).toEqual([
      ['suspect', null],
      ['suspect', null],
      ['reliable', 1],
      ['reliable', 2],
    ]);
    expect(cell.verification).toEqual({ reliableRuns: 2, suspectRuns: 2, retests: 2, median: 'reliable' });

    await page.goto(`${gateway.url}/#/snapshot?${new URLSearchParams({ url: shared, date })}`);
    const card = 'article.cell[data-device="desktop"][data-location="frankfurt"]';
    await page.waitForSelector(`${card} table.runs`);
    const rows = await page.$$eval(`${card} table.runs tbody tr[data-verdict]`, (trs) =>
      trs.map((tr) => ({
        marked: tr.classList.contains('suspect'),
        run: tr.querySelector('.run-number')!.textContent,
        verdict: tr.querySelector('.verdict')!.textContent,
      })),
    );
    expect(rows.map((r) => [r.marked, r.verdict])).toEqual([
      [true, 'suspect'],
      [true, 'suspect'],
      [false, 'reliable'],
      [false, 'reliable'],
    ]);
    expect(rows[2]!.run).toMatch(/^3 \(re-test of 1/);
    expect(rows[cell.median - 1]!.run).toMatch(/median\)$/);
    // Why, in words, under each suspect run.
    expect(await page.$$eval(`${card} tr.suspect-reasons td`, (tds) => tds.map((td) => td.textContent))).toEqual([
      cell.runs[0]!.reasons!.join(' · '),
      cell.runs[1]!.reasons!.join(' · '),
    ]);
    expect(cell.runs[0]!.reasons![0]).toBe('1 other run was in progress on agent frankfurt-shared during this run');
    expect(await page.textContent(`${card} .verification`)).toBe(
      '2 reliable, 2 suspect runs, 2 re-tests · median over reliable runs',
    );
    await screenshot('suspect-runs');
    expect(problems).toEqual([]);
  });

  it("shows a project's budgets, each cell's stored checks with their state, and deploy markers on the trend plots", async () => {
    const url = 'https://budgeted.example/';
    await gateway.admin.addProject('dana', url, { locations: ['london'], runs: 1 });
    // One budget every page meets, one none does.
    await client.budgets(url, { budgets: { lcp: 999_999, bytes: 1 }, maxRegression: {} });
    const result = await client.update({ url, device: 'desktop' });
    const date = result.desktop!.london!.lighthouse.date;
    const marker = await client.annotate({ url, text: 'release 3.1', date, link: 'https://git.example/releases/3.1' });
    const checks = (await client.audit({ url, date })).desktop!.london!.checks!;
    expect(checks.map((c) => [c.key, c.pass, c.state, c.event ?? null])).toEqual([
      ['lcp', true, 'passing', null],
      ['bytes', false, 'failing', 'budget.failed'],
    ]);

    await page.goto(`${gateway.url}/#/project?${new URLSearchParams({ url })}`);
    // A vertical line has no width: attached is what can be waited for.
    await page.waitForSelector('figure[data-kpi="performance"] line.annotation', { state: 'attached' });
    expect(await page.textContent('#budgets')).toBe('Budgets: LCP ≤ 999999 ms · total bytes ≤ 1 B');
    // The marker on every trend plot, at its date, its text on hover; and listed with its link.
    const lines = await page.$$eval('figure line.annotation', (els) =>
      els.map((l) => `${l.getAttribute('data-date')} ${l.getAttribute('data-text')}`),
    );
    // One per plot that has data (INP has field data only, which this project has too).
    expect(lines).toHaveLength(await page.$$eval('figure.chart:not(.strip) svg', (svgs) => svgs.length));
    expect(lines.length).toBeGreaterThanOrEqual(10);
    expect(new Set(lines)).toEqual(new Set([`${marker.date} release 3.1`]));
    expect(await page.getAttribute('.annotations li a', 'href')).toBe('https://git.example/releases/3.1');
    await screenshot('deploy-markers');

    await page.goto(`${gateway.url}/#/snapshot?${new URLSearchParams({ url, date })}`);
    const card = 'article.cell[data-device="desktop"][data-location="london"]';
    await page.waitForSelector(`${card} ul.checks`);
    const shown = await page.$$eval(`${card} ul.checks li`, (items) =>
      items.map((li) => ({
        check: li.getAttribute('data-check'),
        state: li.getAttribute('data-state'),
        failed: li.classList.contains('check-fail'),
        text: li.textContent,
      })),
    );
    expect(shown).toEqual([
      { check: 'budget:lcp', state: 'passing', failed: false, text: `✓ ${checks[0]!.message}` },
      {
        check: 'budget:bytes',
        state: 'failing',
        failed: true,
        text: `✗ ${checks[1]!.message} · confirmation run failed · alert sent`,
      },
    ]);
    await screenshot('budget-checks');
    expect(problems).toEqual([]);
  });

  it("shows the median run's filmstrip and final screenshot, kept small by the agent", async () => {
    // An agent whose Lighthouse results carry Lighthouse-sized JPEG screenshots; the agent
    // re-encodes them (screenshot-compactor.ts) before they travel and are stored.
    const jpeg = async (width: number, height: number, shade: number) =>
      `data:image/jpeg;base64,${(
        await sharp({ create: { width, height, channels: 3, background: { r: shade, g: 120, b: 200 } } })
          .jpeg({ quality: 90 })
          .toBuffer()
      ).toString('base64')}`;
    const final = await jpeg(412, 823, 30);
    const frames = await Promise.all([0, 1, 2, 3].map((i) => jpeg(200, 400, 40 * i)));
    agents.push(
      startAgent({
        nc: agentConn,
        location: 's_carolina',
        runner: fixtureRunner({
          change: (lhr) => {
            const audits = lhr.audits as Record<string, { details?: unknown }>;
            audits['final-screenshot'] = {
              ...audits['final-screenshot'],
              details: { type: 'screenshot', timing: 900, timestamp: 1, data: final },
            };
            audits['screenshot-thumbnails'] = {
              ...audits['screenshot-thumbnails'],
              details: {
                type: 'filmstrip',
                scale: 1200,
                items: frames.map((data, i) => ({ timing: 300 * (i + 1), timestamp: i, data })),
              },
            };
          },
        }),
        logger: silentLogger,
        agentId: 'carolina-pictures',
      }),
    );
    const url = 'https://pictures.example/';
    await gateway.admin.addProject('dana', url, { locations: ['s_carolina'], runs: 1 });
    const result = await client.update({ url, device: 'mobile' });
    const lhr = result.mobile!.s_carolina!.lighthouse as unknown as {
      audits: Record<string, { details: { data?: string; items?: Array<{ data: string; timing: number }> } }>;
    };
    const stored = lhr.audits['screenshot-thumbnails']!.details.items!;
    expect(stored.map((f) => f.timing)).toEqual([300, 600, 900, 1200]);
    expect(lhr.audits['final-screenshot']!.details.data).toMatch(/^data:image\/webp;base64,/);

    await page.goto(
      `${gateway.url}/#/snapshot?${new URLSearchParams({ url, date: result.mobile!.s_carolina!.lighthouse.date })}`,
    );
    const card = 'article.cell[data-device="mobile"][data-location="s_carolina"]';
    await page.waitForSelector(`${card} .filmstrip img`);
    const shown = await page.$$eval(`${card} .filmstrip li`, (items) =>
      items.map((li) => ({
        timing: li.getAttribute('data-timing'),
        src: li.querySelector('img')!.getAttribute('src'),
      })),
    );
    expect(shown.map((f) => [f.timing, f.src])).toEqual(stored.map((f) => [String(f.timing), f.data]));
    // The browser decodes every WebP (the dashboard's CSP allows data: images).
    await expect
      .poll(async () =>
        page.$$eval(`${card} .filmstrip img, ${card} img.final-screenshot`, (imgs) =>
          imgs.every((img) => (img as unknown as { naturalWidth: number }).naturalWidth > 0),
        ),
      )
      .toBe(true);
    expect(await page.getAttribute(`${card} img.final-screenshot`, 'src')).toBe(
      lhr.audits['final-screenshot']!.details.data,
    );
    await screenshot('filmstrip');
    expect(problems).toEqual([]);
  });
});
