/**
 * perfwatch scanning the demo shop: a gateway, a real nats-server and FerretDB, and ONE location
 * whose one agent runs real Lighthouse on Chromium at `capacity` runs at once (as `perfwatch
 * agent` with PERFWATCH_CAPACITY). The site is added through POST /v1/sites (discovery from
 * robots.txt and the sitemap index; up to 50 pages named by include patterns, so every page
 * measured is a page of the site), then every page is updated at once with an async /v1/update
 * (desktop, 1 run, verdict re-tests as shipped unless turned off) and polled to done. Wall time: from the first
 * update asked to the last one stored. Pages past the 50 patterns the site's sample leaves out
 * are added as projects of their own (a site update naming every page replaces this once
 * /v1/sites/{id}/update is on the branch).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { z } from 'zod';
import { startAgent } from '@perfwatch/agent';
import { auditResultSchema } from '@perfwatch/common';
import { createAdmin, gatewayConfigWith, MongoStore, startGateway } from '@perfwatch/gateway';
import { startFerretDb, startNatsServer } from '../test/support/local-servers.ts';
import { benchRunnerPool, root } from './local-stack.ts';
import type { ToolScan } from './site-scan-pages.ts';

const tools = join(root, '.tools/bin');
/** A site's include patterns at most (site-requests.ts MAX_PATTERNS). */
const MAX_PATTERNS = 50;

const sitesSchema = z.object({
  sites: z.array(z.object({ origin: z.string(), lastDiscovery: z.object({ state: z.string() }).nullable() })),
});
const projectsSchema = z.object({ projects: z.array(z.object({ url: z.string() })) });
const ackSchema = z.object({ id: z.string() });
const statusSchema = z.object({ status: z.string(), date: z.string().nullable(), reason: z.string().nullable() });

type Api = (path: string, body?: unknown) => Promise<unknown>;

function apiOf(gatewayUrl: string, token: string): Api {
  return async (path, body) => {
    const res = await fetch(`${gatewayUrl}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { Authorization: token, 'Content-Type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const answer: unknown = await res.json();
    if (!res.ok) throw new Error(`${path} answered ${res.status}: ${JSON.stringify(answer).slice(0, 300)}`);
    return answer;
  };
}

/** The site added and discovered; the URLs of `paths` each a project (of the site where it can be). */
async function addSite(
  api: Api,
  addProject: (url: string) => Promise<unknown>,
  origin: string,
  paths: readonly string[],
) {
  await api('/v1/sites', {
    origin,
    maxPages: 1000,
    sampleSize: 20,
    ...(paths.length <= MAX_PATTERNS ? { include: paths } : {}),
    devices: ['desktop'],
    locations: ['london'],
    runs: 1,
  });
  for (let i = 0; ; i++) {
    const site = sitesSchema.parse(await api('/v1/sites')).sites.find((s) => s.origin === origin);
    if (site?.lastDiscovery?.state === 'done') break;
    if (site?.lastDiscovery?.state === 'failed' || i > 600) throw new Error(`discovery of ${origin} did not finish`);
    await sleep(100);
  }
  const projects = new Set(projectsSchema.parse(await api('/v1/projects')).projects.map((p) => p.url));
  const urls = paths.map((path) => new URL(path, origin).href);
  const added = urls.filter((url) => !projects.has(url));
  for (const url of added) await addProject(url);
  return { urls, ofSite: urls.length - added.length };
}

/** Every URL updated at once (async), polled until stored; each one's snapshot date. */
async function updateAll(api: Api, urls: readonly string[]) {
  const ids = await Promise.all(
    urls.map(async (url) => ackSchema.parse(await api('/v1/update', { url, device: 'desktop', mode: 'async' })).id),
  );
  const dates = new Map<string, string>();
  while (dates.size < urls.length) {
    for (const [i, id] of ids.entries()) {
      if (dates.has(urls[i]!)) continue;
      const status = statusSchema.parse(await api(`/v1/updates/${id}`));
      if (status.status === 'failed') throw new Error(`perfwatch's update of ${urls[i]} failed: ${status.reason}`);
      if (status.status === 'done') dates.set(urls[i]!, status.date!);
    }
    await sleep(250);
  }
  return dates;
}

/** A page's kept run: the score and LCP of the stored median run, and the runs made for it. */
async function readBack(api: Api, url: string, date: string) {
  const query = new URLSearchParams({ url, date, device: 'desktop' });
  const cell = auditResultSchema.parse(await api(`/v1/audit?${query.toString()}`))['desktop']?.['london'];
  const kept = cell?.runs[cell.median - 1];
  if (kept?.performance == null || kept.lcp == null) throw new Error(`perfwatch stored no score or LCP for ${url}`);
  return { value: { score: kept.performance, lcpMs: kept.lcp }, runs: cell!.runs.length };
}

/**
 * `retests` false runs the gateway with MAX_RETESTS=0: at capacity 2 runs share the agent's CPU,
 * are judged suspect and measured again, which is what the shipped setting buys.
 */
export async function scanWithPerfwatch(
  origin: string,
  paths: readonly string[],
  capacity: number,
  retests = true,
): Promise<ToolScan> {
  const logger = pino({ level: 'silent' });
  const dir = await mkdtemp(join(tmpdir(), 'perfwatch-site-scan-'));
  const nats = await startNatsServer({ binary: join(tools, 'nats-server'), dir: join(dir, 'nats') });
  const db = await startFerretDb({ binary: join(tools, 'ferretdb'), dir: join(dir, 'db') });
  const store = new MongoStore({ uri: db.url, dbName: 'sitescan' });
  await store.init();
  const nc = await connect({ servers: nats.url });
  const runner = benchRunnerPool(capacity, 50, logger);
  const agent = startAgent({ nc, location: 'london', runner, logger, agentId: 'site-scan-london', capacity });
  const gateway = await startGateway({
    nc,
    store,
    logger,
    config: gatewayConfigWith({
      PORT: 0,
      HOST: '127.0.0.1',
      SHUTDOWN_READINESS_DELAY_MS: 0,
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      // One update per page stands in for one site update: the per-minute limits are a client's.
      RATE_LIMIT_UPDATES_PER_MINUTE: 100_000,
      RATE_LIMIT_READS_PER_MINUTE: 100_000,
      ...(retests ? {} : { MAX_RETESTS: 0 }),
    }),
  });
  try {
    const admin = createAdmin(store);
    const { token } = await admin.createUser('bench');
    const api = apiOf(gateway.http.url, token);
    const { urls, ofSite } = await addSite(
      api,
      (url) => admin.addProject('bench', url, { locations: ['london'], runs: 1 }),
      origin,
      paths,
    );
    const started = performance.now();
    const dates = await updateAll(api, urls);
    const wallMs = performance.now() - started;
    const loadAvg = loadavg()[0]!;
    const pages = new Map<string, { score: number; lcpMs: number }>();
    let runs = 0;
    for (const [i, url] of urls.entries()) {
      const read = await readBack(api, url, dates.get(url)!);
      pages.set(paths[i]!, read.value);
      runs += read.runs;
    }
    const note = `${runs} runs for ${urls.length} pages (re-tests of suspect runs included); ${ofSite} of the pages projects of the site`;
    const tool = retests ? 'perfwatch' : 'perfwatch, re-tests off';
    return { tool, parallelism: capacity, wallMs, pages, loadAvg, note };
  } finally {
    await gateway.stop();
    await agent.stop();
    await nc.drain();
    await runner.close();
    await store.close();
    await db.stop();
    await nats.stop();
    await rm(dir, { recursive: true, force: true });
  }
}
