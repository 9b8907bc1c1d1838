import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startAgent, type Agent } from '@perfwatch/agent';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { freePort } from '../support/local-servers.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';
import { PAGE_KPIS } from '../../gateway/src/page-metrics/latest-page-kpis.ts';

// Page metrics (PAGE_METRICS=on) of a real gateway whose projects an agent measured over a real
// nats-server: a real Prometheus (Debian's) scrapes /metrics/pages with the bearer token, its
// answers are /v1/overview's figures, the cap of 2 projects out of 3 holds, promtool passes the
// scrape, and every query of deploy/grafana/perfwatch-pages-dashboard.json has data.

const dashboardFile = join(
  dirname(fileURLToPath(import.meta.url)),
  '../../deploy/grafana/perfwatch-pages-dashboard.json',
);
const TOKEN = 'page-metrics-scraper-token-0123456789abcdef';
/** Measured in this order, a second apart: the first is the least recently measured, so the one the cap leaves out. */
const PAGES = [
  { user: 'pages-a', url: 'https://pages-one.example/' },
  { user: 'pages-b', url: 'https://pages-two.example/' },
  { user: 'pages-a', url: 'https://pages-three.example/' },
];
let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
let agent: Agent;
let prometheus: ChildProcess | undefined;
let dir: string;
let prometheusUrl: string;
const tokens = new Map<string, string>();

function promtoolCheckMetrics(text: string): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    const child = execFile('promtool', ['check', 'metrics'], (error, stdout, stderr) =>
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
    );
    child.stdin!.end(text);
  });
}

type Sample = { metric: Record<string, string>; value: [number, string] };
async function query(expr: string): Promise<Sample[]> {
  const res = await fetch(`${prometheusUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
  const body = (await res.json()) as { status: string; data: { result: Sample[] } };
  expect(body.status).toBe('success');
  return body.data.result;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-pages-'));
  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    config: { PAGE_METRICS: 'on', PAGE_METRICS_TOKEN: TOKEN, PAGE_METRICS_MAX_PROJECTS: 2 },
  });
  agentConn = await connect({ servers: nats.url });
  agent = startAgent({
    nc: agentConn,
    location: 'london',
    runner: fixtureRunner(),
    logger: silentLogger,
    agentId: 'london-pages',
  });
  await vi.waitFor(() => expect(gateway.runtime.agents.all()).toHaveLength(1));
  for (const user of new Set(PAGES.map((p) => p.user))) tokens.set(user, (await gateway.admin.createUser(user)).token);
  for (const [i, page] of PAGES.entries()) {
    await gateway.admin.addProject(page.user, page.url, { locations: ['london'], runs: 1 });
    // Snapshot dates are whole seconds: a second apart, the order of measuring is the order of dates.
    if (i > 0) await sleep(1_100);
    const res = await fetch(`${gateway.url}/v1/update?url=${encodeURIComponent(page.url)}&device=desktop`, {
      headers: { Authorization: tokens.get(page.user)! },
    });
    expect(res.status).toBe(200);
  }

  const promPort = await freePort();
  prometheusUrl = `http://127.0.0.1:${promPort}`;
  const config = join(dir, 'prometheus.yml');
  await writeFile(
    config,
    [
      'global: { scrape_interval: 1s, evaluation_interval: 1s }',
      'scrape_configs:',
      '  - job_name: perfwatch-pages',
      '    metrics_path: /metrics/pages',
      `    authorization: { type: Bearer, credentials: ${TOKEN} }`,
      `    static_configs: [{ targets: ['${new URL(gateway.url).host}'] }]`,
      '',
    ].join('\n'),
  );
  prometheus = spawn(
    'prometheus',
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
    ],
    { stdio: 'ignore' },
  );
}, 120_000);

afterAll(async () => {
  prometheus?.kill('SIGTERM');
  await agent?.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await nats?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** The `performance` KPIs of a project's snapshots from /v1/overview, as its owner reads them. */
async function overviewKpis(page: (typeof PAGES)[number]): Promise<Record<string, number | null>> {
  // From yesterday: an update measured just before midnight (UTC) is read just after.
  const day = new Date().toISOString().slice(0, 10);
  const yesterday = new Date(Date.now() - 86_400_000).toISOString().slice(0, 10);
  const res = await fetch(
    `${gateway.url}/v1/overview?startDate=${yesterday}&endDate=${day}&domain=${new URL(page.url).hostname}&sections=lighthouse`,
    { headers: { Authorization: tokens.get(page.user)! } },
  );
  expect(res.status).toBe(200);
  const records = (await res.json()) as Array<{ url: string; kpi: string; data: Record<string, number | null> }>;
  const performance = records.filter((r) => r.url === page.url && r.kpi === 'performance');
  expect(performance).toHaveLength(1);
  return performance[0]!.data;
}

describe('page metrics with Prometheus', () => {
  it('without the token the endpoint answers 401; the scrape with it passes promtool check metrics', async () => {
    expect((await fetch(`${gateway.url}/metrics/pages`)).status).toBe(401);
    const text = await (
      await fetch(`${gateway.url}/metrics/pages`, { headers: { Authorization: `Bearer ${TOKEN}` } })
    ).text();
    expect(text).toMatch(/^perfwatch_page_projects_left_out 1$/m);
    const { code, output } = await promtoolCheckMetrics(text);
    expect(output).toBe('');
    expect(code).toBe(0);
    // The operations' /metrics names no project.
    expect(await (await fetch(`${gateway.url}/metrics`)).text()).not.toContain('pages-');
  });

  it("a real Prometheus has the two most recently measured projects' KPIs, as /v1/overview has them, and one left out", async () => {
    await vi.waitFor(async () => expect(await query('up{job="perfwatch-pages"} == 1')).toHaveLength(1), {
      timeout: 30_000,
      interval: 500,
    });
    const series = await query('perfwatch_page_kpi');
    const projects = [...new Set(series.map((s) => s.metric['project']))].sort();
    expect(projects).toEqual([PAGES[2]!.url, PAGES[1]!.url].sort());
    expect((await query('perfwatch_page_projects_left_out'))[0]!.value[1]).toBe('1');
    for (const page of PAGES.slice(1)) {
      const expected = await overviewKpis(page);
      const got = Object.fromEntries(
        series
          .filter((s) => s.metric['project'] === page.url)
          .map((s) => {
            expect(s.metric).toMatchObject({ device: 'desktop', location: 'london' });
            return [s.metric['kpi']!, Number(s.value[1])];
          }),
      );
      const wanted = Object.fromEntries(
        PAGE_KPIS.flatMap((k) => (typeof expected[k] === 'number' ? [[k, expected[k]]] : [])),
      );
      expect(Object.keys(wanted)).toEqual(expect.arrayContaining(['score', 'lcp', 'tbt', 'cls']));
      expect(got).toEqual(wanted);
    }
  }, 60_000);

  it('every query of the page-KPI dashboard has data from the scrape', async () => {
    const dashboard = JSON.parse(await readFile(dashboardFile, 'utf8')) as {
      templating: { list: Array<{ name: string; query: unknown }> };
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    };
    expect(dashboard.templating.list.map((v) => v.name)).toEqual(['datasource', 'project', 'device', 'location']);
    await vi.waitFor(async () => expect(await query('perfwatch_page_projects')).toHaveLength(1), { timeout: 30_000 });
    for (const panel of dashboard.panels) {
      for (const target of panel.targets) {
        // Each variable as its "All": every value.
        const expr = target.expr.replace(/\$(project|device|location)\b/g, '.+');
        expect((await query(expr)).length, `${panel.title}: ${expr}`).toBeGreaterThan(0);
      }
    }
    for (const name of ['project', 'device', 'location']) {
      const res = await fetch(`${prometheusUrl}/api/v1/label/${name}/values?match[]=perfwatch_page_kpi`);
      expect(((await res.json()) as { data: string[] }).data.length).toBeGreaterThan(0);
    }
  }, 60_000);
});
