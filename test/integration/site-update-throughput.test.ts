import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PageRunner } from '@perfwatch/agent';
import { createApiClient, type ApiClient } from '@perfwatch/client';
import { siteUpdateAnswerSchema, siteUpdateStatusSchema } from '@perfwatch/common';
import { send } from '../support/api-requests.ts';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { createSite, fixtureAgent } from '../support/site-fixtures.ts';
import { isolatedNats, startTestGateway, type TestGateway } from '../support/test-services.ts';

// Throughput of a site update (issue 34, item 5) over real NATS: two agents of one location, each
// at capacity 2, a site of twelve pages measured twice each. Its runs spread over both agents,
// neither past its capacity, four at once at some moment; and another user's single async update,
// started while the site's runs hold every place, waits for about one run, not for the site.

const SHOP = 'https://throughput-shop.example';
const PAGES = Array.from({ length: 12 }, (_, i) => `${SHOP}/product/${i + 1}`);
const OTHER = 'https://other-user.example/';
// Long enough that a loaded machine's overheads (a poll, a claim, a reply: a few hundred ms at a load
// average of 19) stay well under one run, so "about one run" and "behind the site" stay apart.
const RUN_MS = 800;
const CAPACITY = 2;

/** Every run of every agent: which page, when it started and ended. */
const log: Array<{ url: string; start: number; end: number }> = [];
let running = 0;
let mostAtOnce = 0;
/** A fixture runner that also counts the runs in progress over all agents. */
function counted(runner: ReturnType<typeof fixtureRunner>): PageRunner {
  return {
    async run(request) {
      const start = Date.now();
      mostAtOnce = Math.max(mostAtOnce, ++running);
      try {
        return await runner.run(request);
      } finally {
        running--;
        log.push({ url: request.url, start, end: Date.now() });
      }
    },
    close: () => runner.close(),
  };
}

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
const agents: Awaited<ReturnType<typeof fixtureAgent>>[] = [];
const runners = [fixtureRunner({ delayMs: RUN_MS }), fixtureRunner({ delayMs: RUN_MS })];
let alice: string;
let other: ApiClient;
let siteId: string;

beforeAll(async () => {
  nats = await isolatedNats();
  // No re-tests: one made of a suspect run would add runs to those counted here.
  gateway = await startTestGateway({ natsUrl: nats.url, config: { MAX_RETESTS: 0 } });
  for (const [i, runner] of runners.entries())
    agents.push(await fixtureAgent(nats.url, `tp${i}`, { runner: counted(runner), capacity: CAPACITY }));
  ({ token: alice } = await gateway.admin.createUser('tp-alice'));
  const bob = await gateway.admin.createUser('tp-bob');
  await gateway.admin.addProject('tp-bob', OTHER, { locations: ['london'], runs: 1 });
  other = createApiClient({ server: gateway.url, token: bob.token });
  siteId = await createSite(gateway.url, alice, { origin: SHOP, locations: ['london'], devices: ['mobile'], runs: 2 });
  const pages = PAGES.map((url) => ({ url, group: '/product/:id', sampled: true }));
  await gateway.store.replaceSitePages(siteId, pages, new Date());
}, 60_000);

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  await gateway?.stop();
  await nats?.dispose();
});

const siteStatus = async (id: string) =>
  siteUpdateStatusSchema.parse((await send(gateway.url, `updates/${id}`, 'GET', {}, { Authorization: alice })).body);

/** Another user's single update from start to done, in ms. */
async function otherUpdate(): Promise<{ startedAt: number; doneAt: number }> {
  const startedAt = Date.now();
  const id = await other.startUpdate({ url: OTHER, device: 'mobile' });
  const done = await other.waitForUpdate(id, { pollMs: 20, timeoutMs: 60_000 });
  expect(done.status).toBe('done');
  return { startedAt, doneAt: Date.now() };
}

describe('a site update over two agents of a location', () => {
  it("uses both agents at their capacity, and another user's update waits about one run", async () => {
    // What one update of one run takes here, with nothing else running: the unit of waiting.
    const alone = await otherUpdate();
    const oneUpdateMs = alone.doneAt - alone.startedAt;
    log.length = 0;

    const accepted = await send(gateway.url, `sites/${siteId}/update`, 'POST', { body: {} }, { Authorization: alice });
    const { id, plan } = siteUpdateAnswerSchema.parse(accepted.body);
    expect(plan).toMatchObject({ pages: 12, runs: 2, audits: 24 });
    // Once the site's runs hold every place of both agents, the other user asks for one run.
    for (const deadline = Date.now() + 30_000; running < 2 * CAPACITY; await sleep(10))
      expect(Date.now()).toBeLessThan(deadline);
    const single = await otherUpdate();
    const whenOtherDone = await siteStatus(id!);

    let last = whenOtherDone;
    for (const deadline = Date.now() + 120_000; last.finishedAt === null; await sleep(50)) {
      expect(Date.now()).toBeLessThan(deadline);
      last = await siteStatus(id!);
    }
    expect(last).toMatchObject({ status: 'done', progress: { pages: 12, done: 12, failed: 0 } });

    // Spread: both agents ran the site's pages, neither past its capacity, four at once at some moment.
    for (const runner of runners) {
      expect(runner.requests.filter((r) => r.url.startsWith(SHOP)).length).toBeGreaterThan(0);
      expect(runner.maxConcurrent).toBeLessThanOrEqual(CAPACITY);
    }
    expect(mostAtOnce).toBe(2 * CAPACITY);
    expect(log.filter((run) => run.url.startsWith(SHOP))).toHaveLength(24);

    // Fair: the other user's update ended long before the site's, having waited about one of its runs.
    const siteRuns = log.filter((run) => run.url.startsWith(SHOP)).map((run) => run.end - run.start);
    const runMs = siteRuns.sort((a, b) => a - b)[Math.floor(siteRuns.length / 2)]!;
    expect(whenOtherDone.finishedAt).toBeNull();
    expect(whenOtherDone.progress.done).toBeLessThan(12);
    // Behind the site it would wait for five rounds of the four places or more (24 runs, 4 at once):
    // here it waits for the run ending first, one more run's worth of slack at most.
    expect(single.doneAt - single.startedAt).toBeLessThan(oneUpdateMs + 2.5 * runMs);
    expect(Date.parse(last.finishedAt!)).toBeGreaterThan(single.doneAt);
  }, 180_000);
});
