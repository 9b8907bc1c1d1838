import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  UsageError,
  type SiteUpdateAnswer,
  type SiteUpdatePageStatus,
  type SiteUpdateStatusView,
  type SiteView,
} from '@perfwatch/common';
import { ApiClientError } from './api-client.ts';
import { main } from './client-cli.ts';
import { siteUpdate, type SiteUpdateClient, type SiteUpdateFlags } from './site-update-command.ts';

// The site form of `perfwatch update` against a stand-in of the API's three calls: what it asks,
// prints and exits with. test/integration/site-gate-cli.test.ts runs it against a real gateway.

const SHOP = 'https://shop.example';
const SITE_ID = 'a'.repeat(24);
const UPDATE_ID = '6f1c2d4e-8a7b-4c3d-9e0f-1a2b3c4d5e6f';
const PLAN = { pages: 2, devices: ['mobile'], locations: ['london'], runs: 1, audits: 2, queuedRuns: 0, limit: 600 };

const page = (path: string, change: Partial<SiteUpdatePageStatus>): SiteUpdatePageStatus => ({
  url: `${SHOP}${path}`,
  updateId: null,
  status: 'done',
  budgetFailures: 0,
  score: 90,
  lcp: 1000,
  reason: null,
  ...change,
});
const statusOf = (state: SiteUpdateStatusView['status'], pages: SiteUpdatePageStatus[]): SiteUpdateStatusView => ({
  id: UPDATE_ID,
  kind: 'site',
  siteId: SITE_ID,
  origin: SHOP,
  status: state,
  createdAt: '2026-11-26T10:00:00.000Z',
  finishedAt: null,
  progress: { pages: pages.length, done: 0, failed: 0 },
  budgetFailures: 0,
  pages,
});
const RUNNING = statusOf('running', [page('/', {}), page('/cart', { status: 'running', score: null, lcp: null })]);
const OVER_BUDGET = statusOf('done', [page('/', {}), page('/cart', { budgetFailures: 2, score: 40, lcp: 4200 })]);

/** A stand-in of the API answering the site form's calls in turn; what it was asked. */
function fakeApi(
  statuses: SiteUpdateStatusView[],
  refuse?: { on: 'plan' | 'start'; status: number; message: string; errors: string[] },
) {
  const bodies: unknown[] = [];
  let polls = 0;
  const client: SiteUpdateClient = {
    sites: async () => [{ id: SITE_ID, origin: SHOP } as SiteView],
    async siteUpdate(id, body) {
      expect(id).toBe(SITE_ID);
      bodies.push(body);
      if (refuse && (refuse.on === 'plan') === (body.planOnly === true)) {
        const envelope = { status: 'TOO_MANY_REQUESTS' as const, message: refuse.message, errors: refuse.errors };
        throw new ApiClientError(refuse.status, envelope, '');
      }
      return { ok: 1, id: body.planOnly ? null : UPDATE_ID, plan: PLAN } as SiteUpdateAnswer;
    },
    updateStatus: async () => statuses[Math.min(polls++, statuses.length - 1)]!,
  };
  return { client, bodies, polls: () => polls };
}

async function run(
  client: SiteUpdateClient,
  given: Partial<SiteUpdateFlags> & Record<string, unknown>,
  stdin?: string,
) {
  let out = '';
  let err = '';
  const io = {
    out: { write: (text: string) => (out += text) },
    err: { write: (text: string) => (err += text) },
    pollMs: 1,
    stdin: Readable.from(stdin === undefined ? [] : [stdin]),
  };
  const flags = { site: SHOP, all: false, plan: false, ci: false, json: false, ...given };
  const code = await siteUpdate({ client, io }, [], flags);
  return { code, out, err };
}

describe('perfwatch update --site: the plan', () => {
  it('--plan asks only the plan, prints it and queues nothing', async () => {
    const api = fakeApi([]);
    const { code, out } = await run(api.client, { plan: true, site: 'https://SHOP.example:443/', device: 'mobile' });
    expect(code).toBe(0);
    expect(out).toBe(
      `${SHOP}: 2 pages × 1 device (mobile) × 1 location (london) × 1 run = 2 audits; you have 0 runs queued of 600\n`,
    );
    expect(api.bodies).toEqual([{ devices: ['mobile'], updateType: 'manual', planOnly: true }]);
    expect(api.polls()).toBe(0);
  });

  it('--plan --json prints the answer as the API gave it', async () => {
    const { out } = await run(fakeApi([]).client, { plan: true, json: true });
    expect(JSON.parse(out)).toEqual({ ok: 1, id: null, plan: PLAN });
  });

  it('a refusal past the limit says its numbers, queues nothing and exits 1', async () => {
    const errors = ['your 3 unfinished updates hold 590 runs; this one adds 12; the limit is 600 runs per user'];
    const api = fakeApi([], { on: 'start', status: 429, message: 'You have too many updates waiting.', errors });
    const { code, err } = await run(api.client, { ci: true });
    expect(code).toBe(1);
    expect(err).toContain(`refused, nothing queued: You have too many updates waiting.\n  ${errors[0]}\n`);
    expect(api.polls()).toBe(0);
  });

  it("a page the site does not have (the API's 400) is a usage error", async () => {
    const api = fakeApi([], { on: 'plan', status: 400, message: 'Bad request.', errors: ['not a page of the site'] });
    await expect(run(api.client, { pages: '-' }, '/nowhere\n')).rejects.toThrow(UsageError);
  });
});

describe('perfwatch update --site: the run', () => {
  it('sends the pages of --pages - with the revision, draws progress, and --ci exits 1 naming the page over budget', async () => {
    const api = fakeApi([RUNNING, OVER_BUDGET]);
    const flags = { ci: true, pages: '-', commit: 'ABCDEF0', branch: 'main' };
    const { code, out, err } = await run(api.client, flags, '# changed\n/\n/cart\n');
    expect(code).toBe(1);
    const body = { pages: [`${SHOP}/`, `${SHOP}/cart`], updateType: 'ci', commit: 'abcdef0', branch: 'main' };
    expect(api.bodies).toEqual([{ ...body, planOnly: true }, body]);
    expect(err).toContain('[1/2] done    /  score 90  LCP 1.0 s\n');
    expect(err).toContain('[2/2] done    /cart  score 40  LCP 4.2 s  2 budgets failed\n');
    expect(err).toContain(`site gate: FAILED\nbudgets failed on 1 page:\n  ${SHOP}/cart\n`);
    expect(out).toMatch(new RegExp(`${SHOP}/cart\\s+│ done\\s+│ 40\\s+│ 4.2 s\\s+│ 2`));
  });

  it('without --ci the same pages exit 0: only the gate holds them to their budgets', async () => {
    const { code, err } = await run(fakeApi([OVER_BUDGET]).client, { all: true });
    expect(code).toBe(0);
    expect(err).toContain('site update: FAILED');
  });

  it('a page that failed fails the gate and the update alike; --json prints the final status', async () => {
    const failed = statusOf('failed', [page('/', {}), page('/cart', { status: 'failed', reason: 'TIMEOUT' })]);
    for (const ci of [true, false]) {
      const { code, out } = await run(fakeApi([failed]).client, { ci, json: true });
      expect(code).toBe(1);
      expect(JSON.parse(out)).toEqual(failed);
    }
  });

  it('passes with every page within its budgets', async () => {
    const { code, err } = await run(fakeApi([statusOf('done', [page('/', {})])]).client, { ci: true });
    expect(code).toBe(0);
    expect(err).toContain('site gate: passed (1 page)');
  });

  it('past --timeout prints the pages so far and exits 1', async () => {
    const { code, out, err } = await run(fakeApi([RUNNING]).client, { ci: true, timeout: '0.005' });
    expect(code).toBe(1);
    expect(err).toContain(`site update ${UPDATE_ID} is still running after 0 s`);
    expect(out).toContain(`${SHOP}/cart`);
  });
});

describe('perfwatch update --site --junit', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'perfwatch-site-junit-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes one test case per page, failing those over budget', async () => {
    const junit = join(dir, 'site.xml');
    await run(fakeApi([OVER_BUDGET]).client, { ci: true, junit });
    const xml = await readFile(junit, 'utf8');
    expect(xml.match(/<testcase /g)).toHaveLength(2);
    expect(xml).toContain(`<testcase classname="perfwatch.site" name="${SHOP}/cart"`);
    expect(xml.match(/<failure /g)).toHaveLength(1);
    expect(xml).toContain('type="BudgetExceeded"');
  });
});

describe('perfwatch update --site: the command line', () => {
  it.each([
    [{ budget: ['lcp=1000'] }, '--budget goes with update URL, not --site'],
    [{ async: true }, '--async goes with update URL, not --site'],
    [{ pages: 'x.txt', all: true }, 'give --pages or --all, not both'],
    [{ plan: true, junit: 'x.xml' }, '--junit needs the result'],
    [{ timeout: '-1' }, '--timeout is in seconds'],
    [{ device: 'tablet' }, '--device must be one of mobile, desktop'],
    [{ site: 'https://blog.example' }, 'no site https://blog.example in perfwatch (your sites: https://shop.example)'],
  ])('%j is a usage error, nothing asked', async (flags, message) => {
    const api = fakeApi([]);
    await expect(run(api.client, flags)).rejects.toThrow(message);
    expect(api.bodies).toEqual([]);
  });
});

describe('perfwatch update: the URL form and the site form', () => {
  /** `perfwatch update …` in-process against a stand-in gateway answering the site form's paths. */
  async function perfwatch(...argv: string[]) {
    const paths: string[] = [];
    let out = '';
    let err = '';
    // No site: the site form's first call answered, the command line's last check made.
    const answers: Record<string, unknown> = { '/v1/sites': { sites: [] } };
    const fetch = async (url: string | URL | Request) => {
      const path = new URL(String(url)).pathname;
      paths.push(path);
      return Response.json(answers[path] ?? {}, { status: path in answers ? 200 : 404 });
    };
    const io = { out: { write: (t: string) => (out += t) }, err: { write: (t: string) => (err += t) }, fetch };
    const code = await main(['update', ...argv, '--server', 'http://gateway.test', '--token', 'pw_x'], {}, io);
    return { code, out, err, paths };
  }

  it('--site selects the site form: the sites are read, and an origin none has is a usage error', async () => {
    const run = await perfwatch('--site', 'https://Shop.example:443/', '--ci');
    expect(run.code).toBe(2);
    expect(run.err).toContain('no site https://shop.example in perfwatch: add it with POST /v1/sites first');
    expect(run.paths).toEqual(['/v1/sites']);
  });

  it.each([
    [['--site', SHOP, `${SHOP}/`], 'update --site takes no URL'],
    [[], 'update takes one URL, or --site ORIGIN'],
    [[`${SHOP}/`, '--pages', 'x.txt'], '--pages goes with --site ORIGIN'],
    [[`${SHOP}/`, '--plan'], '--plan goes with --site ORIGIN'],
    [['--site', 'shop.example'], '--site must be an origin'],
  ])('%j exits 2 (usage): %s', async (argv, message) => {
    const run = await perfwatch(...argv);
    expect(run.code).toBe(2);
    expect(run.err).toContain(message);
    expect(run.paths).toEqual([]);
  });
});
