import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareResultSchema, type LighthouseResult } from '@perfwatch/common';
import { startAgent, type Agent, type PageRunner } from '@perfwatch/agent';
import { captureRequests } from '../../agent/src/artifact-capture.ts';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { openApiResponseChecker } from '../support/openapi-responses.ts';
import { getAndPost, send } from '../support/api-requests.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// /v1/compare's requests and third parties (issue 35) through the whole path: an agent over a real
// nats-server answers with the fixture site's real results and keeps each run's requests as
// Lighthouse runs do; the gateway pulls the median run's into its fs artifact store; the second
// snapshot's page loads a third party's script the first did not; the third's agent keeps none.

const SHOP = 'https://shop.example/';
const LAST_TWO = { url: SHOP, from: 'latest', to: 'latest' };
const AD = {
  url: 'https://ads.example/tag.js?cb=1732611111',
  entity: 'Ads Co',
  transferSize: 48_213,
  mainThreadTime: 312.5,
};

/** The fixture site's result as Lighthouse 13 reports a page that loads the ad script. */
function withAd(lhr: LighthouseResult): void {
  const items = (audit: string) => (lhr.audits[audit]!.details as { items: unknown[] }).items;
  (lhr['entities'] as unknown[]).push({ name: AD.entity, origins: ['https://ads.example'], isFirstParty: false });
  items('network-requests').push({
    url: AD.url,
    networkRequestTime: 131.5,
    networkEndTime: 412.25,
    transferSize: AD.transferSize,
    resourceType: 'Script',
    entity: AD.entity,
  });
  items('third-parties-insight').push({
    entity: AD.entity,
    transferSize: AD.transferSize,
    mainThreadTime: AD.mainThreadTime,
  });
  items('long-tasks').push({ url: AD.url, duration: 180, startTime: 900 });
}

/** What the page is like now, and whether the agent keeps its runs' requests. */
const page = { ad: false, keeping: true };

function shopRunner(): PageRunner {
  const runner = fixtureRunner({ change: (lhr) => (page.ad ? withAd(lhr) : undefined) });
  return {
    async run(request) {
      const output = await runner.run(request);
      const requests = page.keeping ? await captureRequests(output.lhr) : null;
      return { ...output, ...(requests ? { artifacts: { requests } } : {}) };
    },
    close: () => runner.close(),
  };
}

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
let agent: Agent;
let token: string;
let dir: string;
let checker: Awaited<ReturnType<typeof openApiResponseChecker>>;

async function update(): Promise<void> {
  const reply = await send(
    gateway.url,
    'update',
    'POST',
    { body: { url: SHOP, device: 'mobile' } },
    { Authorization: token },
  );
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
}

async function compareLastTwo() {
  const [reply] = await getAndPost(checker, gateway.url, 'compare', LAST_TWO, LAST_TWO, { token });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  const result = compareResultSchema.parse(reply.body);
  expect(result.cells).toHaveLength(1);
  return result.cells[0]!;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'perfwatch-compare-requests-'));
  nats = await isolatedNats();
  gateway = await startTestGateway({ natsUrl: nats.url, config: { ARTIFACT_STORE: 'fs', ARTIFACT_DIR: dir } });
  agentConn = await connect({ servers: nats.url });
  agent = startAgent({
    nc: agentConn,
    location: 'london',
    runner: shopRunner(),
    logger: silentLogger,
    agentId: 'london',
  });
  ({ token } = await gateway.admin.createUser('alice'));
  await gateway.admin.addProject('alice', SHOP, { locations: ['london'], runs: 1 });
  checker = await openApiResponseChecker(await (await fetch(`${gateway.url}/v1/openapi.json`)).json());
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await nats?.dispose();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe("/v1/compare's requests and third parties", () => {
  it('a third-party script added between two snapshots is listed added, with its size, and its entity with its cost', async () => {
    await update();
    page.ad = true;
    await update();
    const cell = await compareLastTwo();
    expect(cell.requests).toEqual({
      state: 'compared',
      added: [
        {
          url: AD.url,
          entity: AD.entity,
          resourceType: 'Script',
          to: { transferSize: AD.transferSize, duration: 412.25 - 131.5 },
        },
      ],
      removed: [],
      grown: [],
    });
    expect(cell.thirdParties).toEqual([
      {
        entity: AD.entity,
        from: null,
        to: { transferSize: AD.transferSize, mainThreadTime: AD.mainThreadTime, blockingTime: 130, requests: 1 },
      },
    ]);
  });

  it('a side whose requests were not kept makes the requests unavailable, saying which and why; third parties are still compared', async () => {
    page.keeping = false;
    await update();
    const cell = await compareLastTwo();
    expect(cell.requests).toMatchObject({
      state: 'unavailable',
      reason: expect.stringMatching(/^to: its requests were not kept/),
    });
    expect(cell.thirdParties).toEqual([]);
  });
});
