import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiClient, type ApiClient } from '@perfwatch/client';
import { siteUpdateStatusSchema, type SiteView } from '@perfwatch/common';
import { startDemoSite, type DemoShopSite } from '@perfwatch/local';
import { main } from '../../client/src/client-cli.ts';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { discovered, fixtureAgent } from '../support/site-fixtures.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

// `perfwatch update --site ORIGIN …` (issue 34, item 4) run in-process as a CI job runs it,
// against a real gateway on a real nats-server and MongoDB-wire server, an agent answering with
// captured Lighthouse results, and the demo shop (200 pages in 11 templates) discovered by the
// gateway from its robots.txt and sitemap index. The limit of runs waiting is 100, so the shop's
// sampled pages fit and all of its pages do not.

const LIMIT = 100;

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agent: Awaited<ReturnType<typeof fixtureAgent>>;
let shop: DemoShopSite;
let token: string;
let client: ApiClient;
let site: SiteView;
let sampled: string[];
let dir: string;
const runner = fixtureRunner({ delayMs: 2 });

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-site-gate-'));
  nats = await isolatedNats();
  shop = await startDemoSite({ site: 'shop' });
  gateway = await startTestGateway({
    natsUrl: nats.url,
    config: { PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8', MAX_QUEUED_RUNS_PER_USER: LIMIT },
  });
  agent = await fixtureAgent(nats.url, 'site-gate', { runner });
  ({ token } = await gateway.admin.createUser('site-gate'));
  client = createApiClient({ server: gateway.url, token });
  const made = await client.createSite(new URL(shop.url).origin, {
    maxPages: 500,
    sampleSize: 2,
    devices: ['mobile'],
    locations: ['london'],
    runs: 1,
  });
  site = await discovered(() => client.sites(), made.id);
  expect(site.lastDiscovery, 'its discovery').toMatchObject({ state: 'done' });
  sampled = (await gateway.store.listSitePages(site.id)).filter((page) => page.sampled).map((page) => page.url);
}, 90_000);

afterAll(async () => {
  await agent?.stop();
  await gateway?.stop();
  await shop?.close();
  await nats?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

/** `perfwatch update --site …` in-process, `stdin` its standard input; its exit code and output. */
async function perfwatch(argv: string[], stdin = '') {
  let out = '';
  let err = '';
  const code = await main(
    ['update', ...argv],
    { PERFWATCH_SERVER: gateway.url, PERFWATCH_TOKEN: token },
    {
      out: { write: (text: string) => (out += text) },
      err: { write: (text: string) => (err += text) },
      pollMs: 50,
      stdin: Readable.from([stdin]),
    },
  );
  return { code, out, err };
}

const pathOf = (url: string) => new URL(url).pathname;

describe('perfwatch update --site', () => {
  it('--plan answers pages × devices × locations × runs against the limit and queues nothing', async () => {
    // The origin as a person may type it: the scheme in capitals, a trailing slash.
    const given = `${site.origin.replace('http:', 'HTTP:')}/`;
    const { code, out, err } = await perfwatch(['--site', given, '--plan']);
    expect({ code, err }).toEqual({ code: 0, err: '' });
    const n = sampled.length;
    expect(n).toBeGreaterThan(11);
    expect(out).toBe(
      `${site.origin}: ${n} pages × 1 device (mobile) × 1 location (london) × 1 run = ${n} audits; you have 0 runs queued of ${LIMIT}\n`,
    );
    expect(runner.requests).toHaveLength(0);
  });

  it("measures every sampled page, a line per page as it ends, and passes the gate (exit 0) within the pages' budgets", async () => {
    const { code, out, err } = await perfwatch(['--site', site.origin, '--ci']);
    expect(code, err).toBe(0);
    const n = sampled.length;
    const ended = err.split('\n').filter((line) => /^\[\d+\/\d+\] /.test(line));
    expect(ended).toHaveLength(n);
    expect(ended.at(-1)).toMatch(new RegExp(`^\\[${n}/${n}\\] done {4}/\\S*  score \\d+  LCP \\d`));
    expect(ended.map((line) => line.split(/\s+/)[2]).sort()).toEqual(sampled.map(pathOf).sort());
    for (const url of sampled) expect(out).toMatch(new RegExp(`│ ${url.replace(/[.?]/g, '\\$&')}\\s+│ done\\s+│ \\d+`));
    expect(err).toContain(`site gate: passed (${n} pages)`);
    expect(runner.requests.map((request) => request.url).sort()).toEqual([...sampled].sort());
  });

  it('fails the gate (exit 1) naming the page over its budget; the pages read from standard input, paths or URLs', async () => {
    const [slow, fine] = sampled;
    await client.budgets(slow!, { budgets: { lcp: 1 }, maxRegression: {} });
    const junit = join(dir, 'site.xml');
    const stdin = `# the pages this change touches\n${pathOf(slow!)}\n\n${fine}\n`;
    const before = runner.requests.length;
    const { code, out, err } = await perfwatch(
      ['--site', site.origin, '--ci', '--pages', '-', '--junit', junit, '--commit', 'abcdef1', '--json'],
      stdin,
    );
    expect(code, err).toBe(1);
    expect(err).toContain(`site gate: FAILED\nbudgets failed on 1 page:\n  ${slow}\n`);
    expect(err).toMatch(new RegExp(`\\] done {4}${pathOf(slow!)}  score \\d+  LCP [\\d.]+ m?s  1 budget failed`));
    const status = siteUpdateStatusSchema.parse(JSON.parse(out));
    expect(status).toMatchObject({ status: 'done', origin: site.origin, budgetFailures: 1 });
    expect(status.pages.map((page) => [page.url, page.budgetFailures])).toEqual([
      [slow, 1],
      [fine, 0],
    ]);
    // Those two pages alone were run (a failed budget has its confirmation run: a third run of it).
    expect(new Set(runner.requests.slice(before).map((request) => request.url))).toEqual(new Set([slow, fine]));
    const xml = await readFile(junit, 'utf8');
    expect(xml.match(/<testcase /g)).toHaveLength(2);
    expect(xml).toMatch(new RegExp(`name="${slow!.replace(/[.?]/g, '\\$&')}"[^>]*>\\s*<failure [^>]*BudgetExceeded`));
  });

  it('refuses every page past the limit (exit 1) with the numbers, and queues nothing', async () => {
    const before = runner.requests.length;
    const { code, err } = await perfwatch(['--site', site.origin, '--ci', '--all']);
    expect(code).toBe(1);
    expect(err).toContain(`200 pages × 1 device (mobile) × 1 location (london) × 1 run = 200 audits`);
    expect(err).toContain('site update refused, nothing queued:');
    expect(err).toContain(`limit: ${LIMIT} runs per user`);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(runner.requests.length).toBe(before);
  });

  it('an origin that is no site, or a page the site does not have, is a usage error (exit 2), nothing queued', async () => {
    const before = runner.requests.length;
    const other = await perfwatch(['--site', 'https://elsewhere.example', '--ci']);
    expect(other.code).toBe(2);
    expect(other.err).toContain(`no site https://elsewhere.example in perfwatch (your sites: ${site.origin})`);
    const foreign = await perfwatch(['--site', site.origin, '--ci', '--pages', '-'], 'https://elsewhere.example/x\n');
    expect(foreign.code).toBe(2);
    expect(foreign.err).toContain(`standard input line 1: https://elsewhere.example/x is not a page of ${site.origin}`);
    const unknown = await perfwatch(['--site', site.origin, '--ci', '--pages', '-'], '/no-such-page\n');
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain(`${site.origin}/no-such-page is not a current page of the site`);
    expect(runner.requests.length).toBe(before);
  });
});
