import { setTimeout as sleep } from 'node:timers/promises';
import { connect } from '@nats-io/transport-node';
import { expect } from 'vitest';
import { startAgent, type PageRunner } from '@perfwatch/agent';
import { siteChangedSchema, siteListSchema, type SiteView } from '@perfwatch/common';
import type { MongoStore } from '@perfwatch/gateway';
import { ONE_A_MINUTE, send } from './api-requests.ts';
import { breakableStore } from './breakable-store.ts';
import { fixtureRunner } from './fixture-runner.ts';
import { openApiResponseChecker } from './openapi-responses.ts';
import { isolatedNats, silentLogger, startTestGateway, testStore, type TestGateway } from './test-services.ts';

/**
 * What the suites of sites (issue 34) set up alike: an agent answering with captured Lighthouse
 * results, a site made through the API, its discoveries written straight to the store or waited
 * for, and JSON requests that must succeed.
 */

/**
 * An agent of London on a NATS connection of its own, answering with captured results unless
 * given its runner; `stop` stops it and drains the connection.
 */
export async function fixtureAgent(
  natsUrl: string,
  agentId: string,
  { runner = fixtureRunner(), capacity }: { runner?: PageRunner; capacity?: number } = {},
): Promise<{ stop(): Promise<void> }> {
  const nc = await connect({ servers: natsUrl });
  const agent = startAgent({
    nc,
    location: 'london',
    runner,
    logger: silentLogger,
    agentId,
    ...(capacity === undefined ? {} : { capacity }),
  });
  return {
    async stop() {
      await agent.stop();
      await nc.drain();
    },
  };
}

/** What a conformance suite of a site's operation runs against; `stop` ends it all. */
export type SiteServices = {
  natsUrl: string;
  gateway: TestGateway;
  checker: Awaited<ReturnType<typeof openApiResponseChecker>>;
  /** The gateway's first two users' tokens: the suite's own and another organisation's. */
  alice: string;
  bob: string;
  /** Another gateway on the same nats-server, its rate limits ONE_A_MINUTE (for expectRateLimited). */
  limited(): Promise<TestGateway>;
  stop(): Promise<void>;
};

/**
 * A gateway over a nats-server of its own and a store whose methods fail while `fails(method)`
 * says so, an agent answering with captured results, the gateway's OpenAPI checker, and two
 * users (`{prefix}-alice`, `{prefix}-bob`) in organisations of their own.
 */
export async function startSiteServices({
  prefix,
  fails,
  config,
  runner,
}: {
  prefix: string;
  fails: (method: string) => boolean;
  config?: Parameters<typeof startTestGateway>[0]['config'];
  runner?: PageRunner;
}): Promise<SiteServices> {
  const nats = await isolatedNats();
  const store = breakableStore(await testStore(), fails);
  const gateway = await startTestGateway({ natsUrl: nats.url, store, ...(config ? { config } : {}) });
  const agent = await fixtureAgent(nats.url, prefix, runner ? { runner } : {});
  const checker = await openApiResponseChecker(await (await fetch(`${gateway.url}/v1/openapi.json`)).json());
  const { token: alice } = await gateway.admin.createUser(`${prefix}-alice`);
  const { token: bob } = await gateway.admin.createUser(`${prefix}-bob`);
  const stop = async () => {
    await agent.stop();
    await gateway.stop();
    await nats.dispose();
  };
  const limited = () => startTestGateway({ natsUrl: nats.url, rateLimits: ONE_A_MINUTE });
  return { natsUrl: nats.url, gateway, checker, alice, bob, limited, stop };
}

/** Makes a site through POST /v1/sites as `token`; its id. */
export async function createSite(base: string, token: string, body: Record<string, unknown>): Promise<string> {
  const made = await send(base, 'sites', 'POST', { body }, { Authorization: token });
  expect(made.status, JSON.stringify(made.body)).toBe(200);
  return siteChangedSchema.parse(made.body).site.id;
}

type FoundPage = { url: string; group: string; sampled: boolean };

/**
 * Two discoveries of a site a minute apart, as the store keeps them: what the second no longer
 * finds is gone, what it finds first is added. `pageOf` says each path's URL, group and sampling.
 */
export async function twoDiscoveries(
  store: Pick<MongoStore, 'replaceSitePages'>,
  siteId: string,
  pageOf: (path: string) => FoundPage,
  [earlier, later]: [string[], string[]],
): Promise<void> {
  await store.replaceSitePages(siteId, earlier.map(pageOf), new Date(Date.now() - 60_000));
  await store.replaceSitePages(siteId, later.map(pageOf), new Date());
}

/** The site once its discovery (started in the background) is no longer pending. */
export async function discovered(sites: () => Promise<SiteView[]>, id: string): Promise<SiteView> {
  for (let tries = 0; tries < 300; tries++) {
    const site = (await sites()).find((s) => s.id === id);
    if (site?.lastDiscovery && site.lastDiscovery.state !== 'pending') return site;
    await sleep(100);
  }
  throw new Error(`site ${id} is still being discovered`);
}

/** JSON requests to a gateway as `authorization`, each expected to answer 200; the answer. */
export function jsonApi(base: () => string, authorization: () => string) {
  return async (path: string, method = 'GET', body?: unknown): Promise<unknown> => {
    const response = await fetch(`${base()}${path}`, {
      method,
      headers: { authorization: authorization(), 'content-type': 'application/json', accept: 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const answer: unknown = await response.json();
    expect(response.status, JSON.stringify(answer)).toBe(200);
    return answer;
  };
}

/** A suite user's /v1/sites requests, each expected to answer 200, and the wait for a discovery. */
export function siteRequests(base: () => string, authorization: () => string) {
  const api = jsonApi(base, authorization);
  const sites = (method = 'GET', body?: unknown) => api('/v1/sites', method, body);
  const discoveredSite = (id: string) => discovered(async () => siteListSchema.parse(await sites()).sites, id);
  return { api, sites, discovered: discoveredSite };
}
