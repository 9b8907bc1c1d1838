import { randomUUID } from 'node:crypto';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { GetObjectCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { MongoClient } from 'mongodb';
import { z } from 'zod';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  artifactRequestLineSchema,
  artifactRequestsEndSchema,
  auditResultSchema,
  compareResultSchema,
  compareViewLink,
  parseApiDateTime,
  requestsComparisonSchema,
  thirdPartyChangeSchema,
  type AuditResult,
} from '@perfwatch/common';
import { launchBrowser, watchedPage } from '../support/browser.ts';
import { freePort } from '../support/local-servers.ts';
import {
  runPerfwatch,
  spawnGateway,
  spawnPerfwatch,
  spawnServingAgent,
  type PerfwatchProcess,
} from '../support/perfwatch-process.ts';
import { startSeaweedFs, type SeaweedFs } from '../support/seaweedfs.ts';
import { isolatedNats } from '../support/test-services.ts';
import {
  SCRIPT_BUSY_MS,
  startThirdPartySite,
  THIRD_PARTY_HOST,
  type ThirdPartySite,
} from '../support/third-party-site.ts';

/**
 * Issue 35 end to end, every part real: the shipped `perfwatch gateway` and `perfwatch agent`
 * (Chromium, Lighthouse) on nats-server and a MongoDB-wire server, the artifacts in a real S3
 * server (SeaweedFS) read back through its own API, the dashboard in Chromium drawing them, a
 * third party's script added to a page between two snapshots and found by the comparison; and
 * `perfwatch start` keeping them on disk. One agent, desktop, one run: five Lighthouse runs in all.
 */

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let s3: SeaweedFs;
let site: ThirdPartySite;
let gateway: PerfwatchProcess;
let agent: PerfwatchProcess;
let mongo: MongoClient;
let server: string;
let token: string;
let browser: Browser;
let page: Page;
const problems: string[] = [];
let signedIn = false;
/** /v1/compare's cells with what issue 35 adds to them: the median runs' requests and third parties compared. */
const comparedSchema = compareResultSchema.extend({
  cells: z.array(
    compareResultSchema.shape.cells.element.extend({
      requests: requestsComparisonSchema,
      thirdParties: z.array(thirdPartyChangeSchema),
    }),
  ),
});
/** The dates of the heavy page's snapshot, and of the picture page's before its third party came. */
const measured: { heavy?: string; picture?: string } = {};
const dbName = `pwartifacts_${randomUUID().slice(0, 8)}`;
const heavy = () => `${inject('siteUrl')}heavy.html`;

describe('artifacts of the representative run, with real Lighthouse and a real S3 server', () => {
  beforeAll(async () => {
    nats = await isolatedNats();
    s3 = await startSeaweedFs();
    site = await startThirdPartySite();
    const db = { MONGODB_URI: inject('mongoUri'), MONGODB_DB: dbName };
    const created = await runPerfwatch(['admin', 'create-user', 'artifacts', '--json'], db);
    expect(created.code, created.output).toBe(0);
    token = (JSON.parse(created.output.trim().split('\n').at(-1)!) as { token: string }).token;
    for (const url of [heavy(), site.pageUrl]) {
      const project = ['--locations', 'london', '--runs', '1', '--devices', 'desktop'];
      const added = await runPerfwatch(['admin', 'add-project', 'artifacts', url, ...project], db);
      expect(added.code, added.output).toBe(0);
    }
    ({ process: gateway, url: server } = await spawnGateway({
      ...db,
      NATS_URL: nats.url,
      ARTIFACT_STORE: 's3',
      ARTIFACT_S3_ENDPOINT: s3.endpoint,
      ARTIFACT_S3_BUCKET: s3.bucket,
      ARTIFACT_S3_REGION: s3.region,
      ARTIFACT_S3_ACCESS_KEY_ID: s3.accessKeyId,
      ARTIFACT_S3_SECRET_ACCESS_KEY: s3.secretAccessKey,
      ARTIFACT_S3_FORCE_PATH_STYLE: 'true',
    }));
    agent = await spawnServingAgent(nats.url, 'london', 'e2e-artifacts-london');
    mongo = await MongoClient.connect(inject('mongoUri'));
    browser = await launchBrowser();
    page = await watchedPage(browser, problems);
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await agent?.stop();
    await gateway?.stop();
    await mongo?.close();
    await site?.close();
    await s3?.stop();
    await nats?.dispose();
  });

  const authorized = () => ({ Authorization: `Bearer ${token}` });

  /** A sync update of `url` (desktop in London, one run): its answer and its snapshot's date. */
  async function update(url: string): Promise<{ result: AuditResult; date: string }> {
    const res = await fetch(`${server}/v1/update?url=${encodeURIComponent(url)}`, { headers: authorized() });
    const body: unknown = await res.json();
    expect(res.status, JSON.stringify(body).slice(0, 500)).toBe(200);
    const result = auditResultSchema.parse(body);
    return { result, date: result.desktop!.london!.lighthouse.date };
  }

  /** A GET of the API that must succeed. */
  async function get(path: string, params: Record<string, string>): Promise<Response> {
    const res = await fetch(`${server}${path}?${new URLSearchParams(params)}`, { headers: authorized() });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res;
  }

  /** Where the snapshot of `url` at `date` keeps its artifacts: `<org>/<project>/<its update's id>/`. */
  async function snapshotPrefix(url: string, date: string): Promise<string> {
    const snapshot = await mongo
      .db(dbName)
      .collection('snapshots')
      .findOne({ url, date: parseApiDateTime(date)! });
    expect(snapshot, `no snapshot of ${url} at ${date}`).not.toBeNull();
    return `${String(snapshot!['userId'])}/${String(snapshot!['projectId'])}/${String(snapshot!['updateId'])}/`;
  }

  /** The request lines /v1/artifacts serves for a cell, and its end line. */
  async function requestLines(url: string, date: string) {
    const res = await get('/v1/artifacts', { url, date, device: 'desktop', location: 'london', kind: 'requests' });
    const text = await res.text();
    const lines = text.trimEnd().split('\n');
    const end = artifactRequestsEndSchema.parse(JSON.parse(lines.pop()!));
    return { text, requests: lines.map((line) => artifactRequestLineSchema.parse(JSON.parse(line))), end };
  }

  it("the heavy page's requests and trace are objects in S3 under its snapshot's key, stored as its audit says, and served by /v1/artifacts", async () => {
    const { result, date } = await update(heavy());
    measured.heavy = date;
    const prefix = await snapshotPrefix(heavy(), date);
    // Listed by the S3 server itself: the two objects of the cell, nothing else in the bucket.
    const listed = await s3.client.send(new ListObjectsV2Command({ Bucket: s3.bucket }));
    const objects = new Map((listed.Contents ?? []).map((o) => [o.Key!, o.Size!]));
    expect([...objects.keys()].sort()).toEqual([`${prefix}desktop-london-requests`, `${prefix}desktop-london-trace`]);

    const audit = auditResultSchema.parse(await (await get('/v1/audit', { url: heavy(), date })).json());
    expect(audit.desktop!.london!.artifacts).toEqual({
      requests: {
        state: 'stored',
        bytes: objects.get(`${prefix}desktop-london-requests`),
        expires: expect.any(String),
      },
      trace: { state: 'stored', bytes: objects.get(`${prefix}desktop-london-trace`), expires: expect.any(String) },
    });

    // The requests as the run saw them: Lighthouse's network-requests, in its order, none cut.
    const { text, requests, end } = await requestLines(heavy(), date);
    // What the API serves is the object the S3 server holds (gzip, inflated for a client that did not ask for it).
    const object = await s3.client.send(
      new GetObjectCommand({ Bucket: s3.bucket, Key: `${prefix}desktop-london-requests` }),
    );
    expect(object.ContentEncoding).toBe('gzip');
    expect(gunzipSync(await object.Body!.transformToByteArray()).toString('utf8')).toBe(text);
    const lhr = result.desktop!.london!.lighthouse as unknown as {
      audits: Record<string, { details?: { items?: Array<{ url: string }> } }>;
    };
    const items = lhr.audits['network-requests']!.details!.items!;
    expect(end).toEqual({ end: true, requests: items.length, written: items.length, truncated: false });
    expect(requests.map((r) => r.url)).toEqual(items.map((item) => item.url));
    expect(requests.map((r) => new URL(r.url!).pathname)).toEqual(
      expect.arrayContaining(['/heavy.html', '/assets/site.css']),
    );
    const html = requests.find((r) => new URL(r.url!).pathname === '/heavy.html')!;
    expect(html).toMatchObject({ resourceType: 'Document', statusCode: 200 });
    expect(html.transferSize).toBeGreaterThan(0);
    // The trace opens as Chrome DevTools reads it, and holds the page's network events.
    const trace = (await (
      await get('/v1/artifacts', { url: heavy(), date, device: 'desktop', location: 'london', kind: 'trace' })
    ).json()) as { traceEvents: Array<{ name?: string }> };
    expect(trace.traceEvents.some((event) => event.name === 'ResourceSendRequest')).toBe(true);
  }, 180_000);

  /** The snapshot view of `url` at `date`, its desktop cell's artifacts read and drawn. */
  async function openSnapshot(url: string, date: string): Promise<string> {
    if (!signedIn) {
      await page.goto(`${server}/`);
      await page.fill('#token', token);
      await page.click('#sign-in button[type=submit]');
      await page.waitForSelector('.project-link');
      signedIn = true;
    }
    // Loaded afresh: after a change of the hash alone, the previous view's section would still match.
    await page.goto('about:blank');
    await page.goto(`${server}/#/snapshot?${new URLSearchParams({ url, date })}`);
    const card = 'article.cell[data-device="desktop"][data-location="london"]';
    await page.waitForSelector(`${card} section.artifacts[data-loaded="true"]`);
    return `${card} figure.waterfall-figure`;
  }

  it("the snapshot view draws the heavy page's waterfall, a bar for each stored request, none marked LCP (its LCP is text)", async () => {
    const { requests } = await requestLines(heavy(), measured.heavy!);
    const figure = await openSnapshot(heavy(), measured.heavy!);
    const bars = await page.$$eval(`${figure} g.request`, (gs) => gs.map((g) => g.getAttribute('data-url')));
    expect(bars.sort()).toEqual(requests.map((r) => r.url).sort());
    expect(await page.$$(`${figure} g.request rect.bar`)).toHaveLength(requests.length);
    expect(requests.filter((r) => r.lcp)).toEqual([]);
    expect(await page.$$(`${figure} g.request[data-lcp]`)).toHaveLength(0);
    expect(problems).toEqual([]);
  }, 60_000);

  it('a page whose LCP is a picture: its request is marked in the stored requests and on the waterfall', async () => {
    const { date } = await update(site.pageUrl);
    measured.picture = date;
    const { requests } = await requestLines(site.pageUrl, date);
    expect(requests.filter((r) => r.lcp).map((r) => r.url)).toEqual([site.pictureUrl]);
    const figure = await openSnapshot(site.pageUrl, date);
    expect(await page.$$(`${figure} g.request`)).toHaveLength(requests.length);
    const marked = await page.$$eval(`${figure} g.request[data-lcp="true"]`, (gs) =>
      gs.map((g) => g.getAttribute('data-url')),
    );
    expect(marked).toEqual([site.pictureUrl]);
    expect(problems).toEqual([]);
  }, 180_000);

  it("a third party's script added between two snapshots: /v1/compare lists it added with its cost and its entity's cost changed; the compare view shows both", async () => {
    site.addThirdParty();
    const { date } = await update(site.pageUrl);
    const from = measured.picture!;
    const compared = comparedSchema.parse(
      await (
        await get('/v1/compare', { url: site.pageUrl, from, to: date, device: 'desktop', location: 'london' })
      ).json(),
    );
    const cell = compared.cells.find((c) => c.device === 'desktop' && c.location === 'london')!;
    const { requests } = cell;
    if (requests.state !== 'compared') throw new Error(`requests not compared: ${requests.reason}`);
    // Lighthouse names an unrecognised host's entity by the host: the page's is 127.0.0.1.
    const entity = THIRD_PARTY_HOST;
    expect(requests.added).toEqual([expect.objectContaining({ url: site.scriptUrl, entity, resourceType: 'Script' })]);
    expect(requests.removed).toEqual([]);
    const added = requests.added[0]!;
    expect(added.to!.transferSize).toBeGreaterThanOrEqual(site.scriptBytes);
    expect(added.to!.duration).toBeGreaterThan(0);
    const widget = cell.thirdParties.find((e) => e.entity === entity)!;
    console.info(`third party added: ${JSON.stringify(added)}; its entity: ${JSON.stringify(widget)}`);
    expect(widget.from).toBeNull();
    // Its one task ran SCRIPT_BUSY_MS by the page's clock, whatever the machine's speed (the trace's
    // own account of it may fall a little short of the page's clock, never by a tenth).
    expect(widget.to).toMatchObject({ requests: 1, transferSize: added.to!.transferSize });
    expect(widget.to!.mainThreadTime).toBeGreaterThanOrEqual(SCRIPT_BUSY_MS * 0.9);
    expect(widget.to!.blockingTime).toBeGreaterThanOrEqual((SCRIPT_BUSY_MS - 50) * 0.9);

    await page.goto(
      compareViewLink(server, { url: site.pageUrl, from, to: date, device: 'desktop', location: 'london' }),
    );
    const card = 'article.cell[data-device="desktop"][data-location="london"]';
    const item = `${card} li[data-change="added"][data-url="${site.scriptUrl}"]`;
    await page.waitForSelector(item);
    expect(await page.getAttribute(item, 'data-entity')).toBe(entity);
    expect(Number(await page.getAttribute(item, 'data-to-bytes'))).toBe(added.to!.transferSize);
    expect(await page.$$(`${card} li[data-change="added"]`)).toHaveLength(1);
    const row = `${card} table.third-party-changes tr[data-entity="${entity}"]`;
    expect(await page.getAttribute(row, 'data-change')).toBe('added');
    for (const field of ['transferSize', 'mainThreadTime', 'blockingTime'] as const)
      expect(Number(await page.getAttribute(`${row} td[data-field="${field}"]`, 'data-to'))).toBe(widget.to![field]);
    expect(problems).toEqual([]);
  }, 180_000);
});

describe('perfwatch start (what npm start runs)', () => {
  it("keeps the measured page's artifacts as files under PERFWATCH_DATA_DIR/artifacts, stored as its audit says", async () => {
    const cwd = await mkdtemp(join(tmpdir(), 'perfwatch-artifacts-start-'));
    const dataDir = join(cwd, 'state');
    const env = {
      PORT: String(await freePort()),
      PERFWATCH_DEMO_PORT: String(await freePort()),
      PERFWATCH_DATA_DIR: dataDir,
    };
    const start = spawnPerfwatch(['start'], env, { cwd, bare: true });
    try {
      const [, key, line] = await start.waitFor(/curl -s -H "Authorization: (pw_[^"]+)" "([^"]+)"/, 60_000);
      const res = await fetch(line!, { headers: { Authorization: key! } });
      const body: unknown = await res.json();
      expect(res.status, JSON.stringify(body).slice(0, 500)).toBe(200);
      const cell = auditResultSchema.parse(body).mobile!.s_carolina!;
      const { date } = cell.lighthouse;
      const demo = cell.lighthouse['finalDisplayedUrl'] as string;

      // One snapshot's two files, <org>/<project>/<update id>/<device>-<location>-<kind>, each
      // with its content type beside it; nothing left half written.
      const artifacts = join(dataDir, 'artifacts');
      const files = [];
      for (const entry of await readdir(artifacts, { recursive: true, withFileTypes: true }))
        if (entry.isFile()) files.push(join(entry.parentPath, entry.name).slice(artifacts.length + 1));
      const data = files.filter((file) => !file.endsWith('.meta.json')).sort();
      expect(data).toHaveLength(2);
      const snapshotDir = data[0]!.split('/').slice(0, 3).join('/');
      expect(snapshotDir).toMatch(/^[\w-]+\/[\w-]+\/[\w-]+$/);
      expect(data).toEqual([`${snapshotDir}/mobile-s_carolina-requests`, `${snapshotDir}/mobile-s_carolina-trace`]);
      expect(files.sort()).toEqual([data[0], `${data[0]}.meta.json`, data[1], `${data[1]}.meta.json`]);

      const headers = { Authorization: key! };
      const base = `http://127.0.0.1:${env.PORT}`;
      const read = async (path: string, params: Record<string, string>) =>
        fetch(`${base}${path}?${new URLSearchParams({ url: demo, date, ...params })}`, { headers });
      const audit = auditResultSchema.parse(await (await read('/v1/audit', {})).json());
      const sizeOf = async (file: string) => (await stat(join(artifacts, file))).size;
      expect(audit.mobile!.s_carolina!.artifacts).toEqual({
        requests: { state: 'stored', bytes: await sizeOf(data[0]!), expires: expect.any(String) },
        trace: { state: 'stored', bytes: await sizeOf(data[1]!), expires: expect.any(String) },
      });
      // The update's own answer said so already.
      expect(cell.artifacts).toEqual(audit.mobile!.s_carolina!.artifacts);
      // Read back through the API: every request of the run, none cut.
      const answer = await read('/v1/artifacts', { device: 'mobile', kind: 'requests' });
      expect(answer.status).toBe(200);
      const lines = (await answer.text()).trimEnd().split('\n');
      const end = artifactRequestsEndSchema.parse(JSON.parse(lines.pop()!));
      expect(end).toEqual({ end: true, requests: lines.length, written: lines.length, truncated: false });
      expect(lines.map((l) => new URL(artifactRequestLineSchema.parse(JSON.parse(l)).url!).pathname)).toEqual(
        expect.arrayContaining(['/', '/assets/site.css', '/assets/hero.svg']),
      );
      expect(await start.stop('SIGTERM')).toBe(0);
    } finally {
      await start.stop();
      await rm(cwd, { recursive: true, force: true });
    }
  }, 180_000);
});
