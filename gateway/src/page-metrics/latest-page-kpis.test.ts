import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIGHTHOUSE_KPI_VERSION, lighthouseKpis, performanceKpi, stepRunSummary, type Device } from '@perfwatch/common';
import { loadFlowSteps, loadLhr } from '../../../test/support/lhr-fixtures.ts';
import { ResultBytes } from '../snapshots/result-bytes.ts';
import { newCell } from '../../../test/support/new-cells.ts';
import { SqliteStore } from '../store/sqlite-store.ts';
import type { ProjectRecord } from '../store/store.ts';
import { readLatestPageKpis } from './latest-page-kpis.ts';

// The latest snapshot's KPIs of each project, read from the embedded store's KPI records: the
// newest snapshot wins, the cap keeps the most recently measured, and a page of another
// organisation on the same domain stays apart.

let store: SqliteStore;
const projects: ProjectRecord[] = [];
const FAR = Date.now() + 60_000;

function cell(device: Device, fixture: 1 | 2 | 3) {
  const lighthouse = loadLhr(device, fixture);
  return newCell({
    device,
    location: 'london',
    median: 1,
    runs: [],
    lighthouse,
    crux: { url: null },
    elementCount: 1,
    kpis: lighthouseKpis(lighthouse),
  });
}

async function snapshot(project: ProjectRecord, at: string, fixture: 1 | 2 | 3, devices: Device[] = ['mobile']) {
  await store.saveSnapshot({
    project,
    updateId: `${project.id}-${at}`,
    date: new Date(at),
    updateType: 'manual',
    results: devices.map((d) => cell(d, fixture)),
    kpiVersion: LIGHTHOUSE_KPI_VERSION,
  });
}

beforeAll(async () => {
  store = new SqliteStore({ path: ':memory:' });
  await store.init();
  const [a, b] = [await store.createUser('org-a'), await store.createUser('org-b')];
  const page = (userId: string, url: string) =>
    store.addProject({
      userId,
      url,
      domain: new URL(url).hostname,
      locations: ['london'],
      defaultLocation: 'london',
      runs: 1,
      schedule: null,
    });
  projects.push(await page(a.id, 'https://shop.example/'), await page(b.id, 'https://shop.example/cart'));
  projects.push(await page(a.id, 'https://blog.example/'), await page(a.id, 'https://never.example/'));
  await snapshot(projects[0]!, '2026-11-01T10:00:00Z', 1);
  await snapshot(projects[0]!, '2026-11-03T10:00:00Z', 2, ['mobile', 'desktop']);
  await snapshot(projects[1]!, '2026-11-03T10:00:00Z', 3);
  await snapshot(projects[2]!, '2026-11-02T10:00:00Z', 1);
});
afterAll(async () => {
  await store.close();
});

describe('the latest page KPIs', () => {
  it("each project's newest snapshot, every cell, the KPIs of its performance record", async () => {
    const { pages, leftOut } = await readLatestPageKpis(store, { maxProjects: 10, deadline: FAR });
    expect(leftOut).toBe(0);
    expect(pages.map((p) => p.url)).toEqual([
      'https://blog.example/',
      'https://shop.example/',
      'https://shop.example/cart',
    ]);
    const shop = pages.find((p) => p.url === 'https://shop.example/')!;
    expect(shop.date).toEqual(new Date('2026-11-03T10:00:00Z'));
    const wanted = performanceKpi(loadLhr('desktop', 2));
    const desktop = shop.cells.find((c) => c.device === 'desktop')!;
    expect(desktop.kpis).toEqual({
      score: wanted.score,
      fcp: wanted.fcp,
      lcp: wanted.lcp,
      tbt: wanted.tbt,
      cls: wanted.cls,
      si: wanted.si,
      ttfb: wanted.ttfb,
      tti: wanted.tti,
    });
    expect(shop.cells.map((c) => c.device).sort()).toEqual(['desktop', 'mobile']);
    // The other organisation's page on the same domain and date is its own, with its own figures.
    const cart = pages.find((p) => p.url === 'https://shop.example/cart')!;
    expect(cart.cells).toEqual([
      expect.objectContaining({
        device: 'mobile',
        kpis: expect.objectContaining({ lcp: performanceKpi(loadLhr('mobile', 3)).lcp }),
      }),
    ]);
  });

  it('past the cap the least recently measured go, counted; a project never measured is not counted', async () => {
    const { pages, leftOut } = await readLatestPageKpis(store, { maxProjects: 2, deadline: FAR });
    expect(pages.map((p) => p.url)).toEqual(['https://shop.example/', 'https://shop.example/cart']);
    expect(leftOut).toBe(1);
  });

  it("a flow's page gives its first step's KPIs once per cell, not one per step", async () => {
    const flowStore = new SqliteStore({ path: ':memory:' });
    await flowStore.init();
    try {
      const user = await flowStore.createUser('org-flow');
      const project = await flowStore.addProject({
        userId: user.id,
        url: 'https://shop.example/cart.html',
        domain: 'shop.example',
        locations: ['london'],
        defaultLocation: 'london',
        runs: 1,
        schedule: null,
      });
      const steps = loadFlowSteps();
      const flowCell = {
        ...newCell({
          device: 'desktop',
          location: 'london',
          median: 1,
          runs: [],
          lighthouse: steps[0]!.lhr,
          crux: { url: null },
          elementCount: 1,
          kpis: lighthouseKpis(steps[0]!.lhr),
        }),
        steps: steps.map(({ name, kind, lhr }) => ({
          name,
          kind,
          median: 1,
          runs: [stepRunSummary(lhr)],
          lighthouse: ResultBytes.fromResult(lhr),
          measured: lhr,
          kpis: lighthouseKpis(lhr),
        })),
      };
      await flowStore.saveSnapshot({
        project,
        updateId: 'flow-1',
        date: new Date('2026-11-04T10:00:00Z'),
        updateType: 'manual',
        results: [flowCell],
        kpiVersion: LIGHTHOUSE_KPI_VERSION,
      });
      const { pages } = await readLatestPageKpis(flowStore, { maxProjects: 10, deadline: FAR });
      expect(pages[0]!.cells).toEqual([
        {
          device: 'desktop',
          location: 'london',
          kpis: expect.objectContaining({ lcp: performanceKpi(steps[0]!.lhr).lcp }),
        },
      ]);
    } finally {
      await flowStore.close();
    }
  });

  it('out of time: nothing read, every project counted left out', async () => {
    const { pages, leftOut } = await readLatestPageKpis(store, { maxProjects: 10, deadline: Date.now() - 1 });
    expect(pages).toEqual([]);
    expect(leftOut).toBe(4);
  });
});
