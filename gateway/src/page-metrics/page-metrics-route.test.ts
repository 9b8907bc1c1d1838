import type { AddressInfo } from 'node:net';
import express from 'express';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { errorHandler } from '../http/http-errors.ts';
import type { ProjectRecord } from '../projects/store/projects-store.ts';
import type { KpiRow, OverviewFilter } from '../snapshots/store/kpis-store.ts';
import type { PageKpiStore } from './latest-page-kpis.ts';
import { pageMetricsOptionsOf, pageMetricsRoute } from './page-metrics-route.ts';

const TOKEN = 'a'.repeat(40);
/** Three projects of two organisations, measured on the 1st, 2nd and 3rd of the month. */
const projects = [1, 2, 3].map(
  (day) =>
    ({
      id: `p${day}`,
      userId: `org${day % 2}`,
      url: `https://site${day}.example/`,
      domain: `site${day}.example`,
    }) as ProjectRecord,
);
const dateOf = (id: string) => new Date(`2026-11-0${id.slice(1)}T00:00:00Z`);
let reads = 0;
const store: PageKpiStore = {
  listProjects: async () => projects,
  listSnapshots: async (id) => [{ date: dateOf(id), updateType: 'manual', available: [] }],
  async *streamKpis(filter: OverviewFilter): AsyncIterable<readonly KpiRow[]> {
    reads++;
    const project = projects.find((p) => p.domain === filter.domain && p.userId === filter.userId)!;
    const base = {
      date: filter.from,
      domain: project.domain,
      url: project.url,
      updateType: 'manual',
      section: 'LIGHTHOUSE',
    } as const;
    yield [
      { ...base, device: 'desktop', location: 'london', kpi: 'accessibility', dataJson: '{"score":90}' },
      {
        ...base,
        device: 'desktop',
        location: 'london',
        kpi: 'performance',
        dataJson: '{"score":91,"lcp":1200.5,"inp":null}',
      },
    ];
  },
};

let url: string;
let close: () => void;
beforeAll(async () => {
  const app = express();
  app.get('/metrics/pages', pageMetricsRoute({ store, token: TOKEN, maxProjects: 2 }));
  app.use(errorHandler(pino({ level: 'silent' })));
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics/pages`;
  close = () => server.close();
});
afterAll(() => close());

describe('GET /metrics/pages', () => {
  it('without the token, or with another, 401 and no URL', async () => {
    for (const headers of [{}, { Authorization: `Bearer ${'b'.repeat(40)}` }, { Authorization: TOKEN }]) {
      const res = await fetch(url, { headers });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(await res.text()).not.toContain('example');
    }
  });

  it('the most recently measured projects up to the cap, the rest counted, one read per cache interval', async () => {
    const res = await fetch(url, { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain(
      'perfwatch_page_kpi{project="https://site3.example/",device="desktop",location="london",kpi="lcp"} 1200.5',
    );
    expect(text).toContain(
      'perfwatch_page_kpi{project="https://site2.example/",device="desktop",location="london",kpi="score"} 91',
    );
    expect(text).not.toContain('site1.example');
    expect(text).toMatch(/^perfwatch_page_projects_left_out 1$/m);
    const before = reads;
    await fetch(url, { headers: { Authorization: `Bearer ${TOKEN}` } });
    expect(reads).toBe(before);
  });

  it('on without a token refuses to start; off is no route', () => {
    expect(() => pageMetricsOptionsOf({ PAGE_METRICS: 'on', PAGE_METRICS_MAX_PROJECTS: 5 })).toThrow(
      /PAGE_METRICS_TOKEN/,
    );
    expect(pageMetricsOptionsOf({ PAGE_METRICS: 'off', PAGE_METRICS_MAX_PROJECTS: 5 })).toEqual({});
  });
});
