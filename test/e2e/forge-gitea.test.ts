import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { Writable } from 'node:stream';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createApiClient, type ApiClient } from '@perfwatch/client';
import { reportMarker } from '@perfwatch/common';
import { main as clientMain } from '../../client/src/client-cli.ts';
import { launchBrowser } from '../support/browser.ts';
import { startGitea, type Gitea } from '../support/gitea.ts';
import { freePort } from '../support/local-servers.ts';
import { measuredWait } from '../support/measured-wait.ts';
import { spawnPerfwatch, type PerfwatchProcess } from '../support/perfwatch-process.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

// Issue 32 with every part real: a Gitea built from its source holds a shop's page; a pull
// request makes it slower (a 1.5 s task at load). Production and the pull request's preview are
// served from the repository itself (Gitea's raw files at main and at the pull request's head);
// a `perfwatch agent` (Chromium, Lighthouse) measures them through a gateway on nats-server and
// the MongoDB-wire server. `perfwatch update --ci --report gitea` sets failing statuses whose link
// opens the compare view in Chromium, and edits its one comment on a second run; a signed pull
// request event from Gitea itself has the gateway measure the new head and report the same way;
// a forged one is refused and measures nothing.

const FAST =
  '<!doctype html><html><head><title>Shop</title></head><body><h1>Shop</h1><p>Fresh bread.</p></body></html>';
// After the first paint (as the demo site's heavy page does), a task blocks the main thread 1.5 s
// of wall time whatever the machine: total blocking time far beyond any budget the fast page's
// own numbers give.
const SLOW = FAST.replace(
  '</body>',
  '<script>requestAnimationFrame(() => setTimeout(() => { const end = performance.now() + 1500; while (performance.now() < end); }, 0));</script></body>',
);
const SECRET = 'gitea-webhook-secret-for-the-test';
const DEVICES = ['desktop', 'mobile'] as const;

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agent: PerfwatchProcess;
let gitea: Gitea;
let client: ApiClient;
let token: string;
let browser: Browser;
const servers: Server[] = [];
let productionUrl: string;
let previewOrigin: string;
let previewUrl: string;
let mainSha: string;
let headSha: string;
let pull: number;
let tbtBudget: number;
/** How long the first report took, from the command to its last forge request: later waits derive from it. */
let firstReportMs: number;

const REPO = 'shop';
const repoPath = () => `/repos/${gitea.username}/${REPO}`;

/** Serves `index.html` of the repository at the ref `refOf(path)` names; 404 otherwise. */
async function serveFromGitea(refOf: (path: string) => Promise<string | null>): Promise<string> {
  const port = await freePort();
  const server = createServer((req, res) => {
    void (async () => {
      const ref = await refOf(req.url ?? '/');
      if (!ref) return res.writeHead(404).end();
      const raw = await fetch(`${gitea.apiUrl}${repoPath()}/raw/index.html?ref=${encodeURIComponent(ref)}`, {
        headers: { authorization: `token ${gitea.token}` },
      });
      res.writeHead(raw.status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      res.end(Buffer.from(await raw.arrayBuffer()));
    })().catch(() => res.writeHead(500).end());
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return `http://127.0.0.1:${port}`;
}

const pullSchema = z.object({ head: z.object({ sha: z.string() }) });

function text(): { stream: Writable; read(): string } {
  let written = '';
  return {
    stream: new Writable({ write: (chunk: Buffer, _enc, done) => ((written += chunk.toString()), done()) }),
    read: () => written,
  };
}

/** `perfwatch update PREVIEW --ci --report gitea` as a Gitea Actions job of the pull request runs it. */
async function reportFromCi(): Promise<{ exit: number; out: string; err: string }> {
  const out = text();
  const err = text();
  const exit = await clientMain(
    ['update', previewUrl, '--ci', '--report', 'gitea', '--base-url', productionUrl, '--budget', `tbt=${tbtBudget}`],
    {
      PERFWATCH_SERVER: gateway.url,
      PERFWATCH_TOKEN: token,
      GITEA_TOKEN: gitea.token,
      GITHUB_SERVER_URL: gitea.url,
      GITHUB_REPOSITORY: `${gitea.username}/${REPO}`,
      // Gitea Actions checks out the pull request's head ref.
      GITHUB_SHA: headSha,
      GITHUB_REF: `refs/pull/${pull}/head`,
      GITHUB_HEAD_REF: 'slower',
    },
    { out: out.stream, err: err.stream, pollMs: 250 },
  );
  return { exit, out: out.read(), err: err.read() };
}

/** The newest status of each perfwatch context on a commit. */
async function statusesOf(sha: string) {
  const all = (await gitea.statuses(REPO, sha)).filter((s) => s.context.startsWith('perfwatch/'));
  const newest = new Map<string, (typeof all)[number]>();
  for (const status of all.sort((a, b) => a.id - b.id)) newest.set(status.context, status);
  return [...newest.values()].sort((a, b) => a.context.localeCompare(b.context));
}

const ownComments = async () =>
  (await gitea.comments(REPO, pull)).filter((c) => c.body.includes(reportMarker(productionUrl)));

beforeAll(async () => {
  gitea = await startGitea();
  await gitea.createRepository(REPO);
  mainSha = await gitea.commitFile(REPO, { branch: 'main', path: 'index.html', content: FAST, message: 'A shop' });
  mainSha = await gitea.commitFile(REPO, { branch: 'main', path: 'README.md', content: '# shop\n', message: 'Readme' });
  headSha = await gitea.commitFile(REPO, {
    branch: 'main',
    newBranch: 'slower',
    path: 'index.html',
    content: SLOW,
    message: 'Count the stock at load',
  });
  pull = await gitea.openPullRequest(REPO, { head: 'slower', base: 'main', title: 'Count the stock at load' });
  productionUrl = `${await serveFromGitea(async (path) => (path === '/' ? 'main' : null))}/`;
  previewOrigin = await serveFromGitea(async (path) => {
    const number = /^\/pr-(\d+)\/$/.exec(path)?.[1];
    if (!number) return null;
    return (await gitea.api('GET', `${repoPath()}/pulls/${number}`, pullSchema)).head.sha;
  });
  previewUrl = `${previewOrigin}/pr-${pull}/`;

  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    runTimeoutMs: 120_000,
    replyTimeoutMs: 240_000,
    config: {
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      // Forge tokens are sealed at rest like page credentials.
      PERFWATCH_SECRETS_KEY: randomBytes(32).toString('base64'),
      MAX_RETESTS: 0,
      FORGE_REPORT_POLL_MS: 200,
    },
  });
  agent = spawnPerfwatch(['agent'], {
    NATS_URL: nats.url,
    PERFWATCH_LOCATION: 'london',
    PERFWATCH_AGENT_ID: 'london-forge',
    PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
  });
  await agent.waitFor(/agent serving location/);
  ({ token } = await gateway.admin.createUser('shop-team'));
  for (const url of [productionUrl, previewUrl])
    await gateway.admin.addProject('shop-team', url, { locations: ['london'], runs: 1 });
  client = createApiClient({ server: gateway.url, token });
  // Production from main, measured once: the base, and what the budget is derived from.
  const production = await client.update({ url: productionUrl, branch: 'main', commit: mainSha });
  const tbts = DEVICES.map((d) => {
    const cell = production[d]?.london;
    return cell?.runs[cell.median - 1]?.tbt ?? 0;
  });
  tbtBudget = Math.max(300, Math.round(Math.max(...tbts) + 500));
  // The same budget on the server, which holds the previews it measures for forge events to it.
  for (const url of [productionUrl, previewUrl])
    await gateway.admin.setBudgets('shop-team', url, { budgets: { tbt: tbtBudget }, maxRegression: {} });
  browser = await launchBrowser();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await agent?.stop();
  await gateway?.stop();
  await nats?.dispose();
  await gitea?.stop();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

describe('results where changes are reviewed, on a real Gitea', () => {
  let firstComment: { id: number; body: string };

  it(
    'perfwatch update --ci --report gitea: a failing status per cell on the head, one comment',
    { timeout: 600_000 },
    async () => {
      const started = performance.now();
      const { exit, err } = await reportFromCi();
      firstReportMs = performance.now() - started;
      expect(exit, err).toBe(1);
      const statuses = await statusesOf(headSha);
      expect(statuses.map((s) => [s.context, s.status])).toEqual([
        ['perfwatch/desktop/london', 'failure'],
        ['perfwatch/mobile/london', 'failure'],
      ]);
      for (const status of statuses) {
        expect(status.description).toMatch(/^perf \d+.* · LCP .* · TBT .* · CLS .* · 1 budget failed$/);
        expect(status.target_url).toContain(`${gateway.url}/#/compare?`);
      }
      const comments = await ownComments();
      expect(comments).toHaveLength(1);
      firstComment = comments[0]!;
      expect(firstComment.body).toContain(`Base: ${productionUrl} at `);
      expect(firstComment.body).toContain('| desktop · london | TBT |');
      expect(firstComment.body).toContain(`- ❌ desktop · london: `);
      // The snapshot knows the change it measured.
      const [snapshot] = (await client.updates(previewUrl)).desktop!.slice(-1);
      const audit = await client.audit({ url: previewUrl, date: snapshot!.date, device: 'desktop' });
      expect(audit.desktop?.london?.revision).toEqual({ commit: headSha, branch: 'slower', pullRequest: pull });
    },
  );

  it("the status's link opens the compare view in Chromium with both snapshots", async () => {
    const [status] = await statusesOf(headSha);
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    await page.goto(status!.target_url);
    await page.fill('#token', token);
    await page.click('#sign-in button[type=submit]');
    await page.waitForSelector('table.compare');
    const side = (name: string) => page.textContent(`p.compare-side[data-snapshot="${name}"] a.side-url`);
    expect(await side('from')).toBe(productionUrl);
    expect(await side('to')).toBe(previewUrl);
    const tbt = await page.textContent('article.cell[data-device="desktop"] tr[data-metric="tbt"] td[data-side="to"]');
    expect(Number(tbt?.replace(/[^\d]/g, ''))).toBeGreaterThan(tbtBudget);
    await page.close();
  });

  it('a second run edits the same comment: still one in the pull request', { timeout: 600_000 }, async () => {
    const { exit } = await reportFromCi();
    expect(exit).toBe(1);
    const comments = await ownComments();
    expect(comments).toHaveLength(1);
    expect(comments[0]!.id).toBe(firstComment.id);
    expect(comments[0]!.body).not.toBe(firstComment.body);
  });

  it('a forged pull request event is refused and nothing is measured', async () => {
    await client.linkRepository({
      url: productionUrl,
      forge: 'gitea',
      repository: `${gitea.username}/${REPO}`,
      apiUrl: gitea.apiUrl,
      token: gitea.token,
      webhookSecret: SECRET,
      previewUrl: `${previewOrigin}/pr-{pullRequest}`,
    });
    const before = (await client.updates(previewUrl)).desktop!.length;
    const body = JSON.stringify({
      action: 'synchronized',
      number: pull,
      pull_request: { number: pull, head: { sha: headSha, ref: 'slower' } },
      repository: { full_name: `${gitea.username}/${REPO}` },
    });
    const answer = await fetch(`${gateway.url}/v1/forge-events/gitea`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-gitea-event': 'pull_request',
        'x-gitea-signature': 'f'.repeat(64),
      },
      body,
    });
    expect(answer.status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect((await client.updates(previewUrl)).desktop!.length).toBe(before);
  });

  it(
    "Gitea's own signed event on a new push has the gateway measure the preview and report",
    { timeout: 1_200_000 },
    async () => {
      await gitea.addWebhook(REPO, {
        url: `${gateway.url}/v1/forge-events/gitea`,
        secret: SECRET,
        events: ['pull_request'],
      });
      const pushed = await gitea.commitFile(REPO, {
        branch: 'slower',
        path: 'index.html',
        content: SLOW.replace('Fresh bread.', 'Fresh bread, counted.'),
        message: 'Count the stock at load, and say so',
      });
      // The same two Lighthouse runs and report as the CLI's: waited for as long as that took
      // on this machine, with room for the webhook and the reporter's polls.
      const wait = measuredWait(firstReportMs, 1, { slack: 4, floorMs: 120_000 });
      await expect
        .poll(async () => (await statusesOf(pushed)).map((s) => [s.context, s.status]), {
          timeout: wait,
          interval: 1_000,
        })
        .toEqual([
          ['perfwatch/desktop/london', 'failure'],
          ['perfwatch/mobile/london', 'failure'],
        ]);
      const comments = await ownComments();
      expect(comments).toHaveLength(1);
      expect(comments[0]!.body).toContain(pushed.slice(0, 12));
      const latest = (await client.updates(previewUrl)).desktop!.at(-1)!;
      const audit = await client.audit({ url: previewUrl, date: latest.date, device: 'desktop' });
      expect(audit.desktop?.london?.revision).toMatchObject({ commit: pushed, pullRequest: pull });
    },
  );
});
