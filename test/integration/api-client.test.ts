import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '@perfwatch/agent';
import type { Flow } from '@perfwatch/common';
import { ApiClientError, CLIENT_OPERATIONS, createApiClient, type ApiClient } from '@perfwatch/client';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { openApiResponseChecker } from '../support/openapi-responses.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// The typed client held against the gateway's /v1/openapi.json: every request it sends must
// match the documented request body, every answer the documented response, over a real gateway,
// nats-server and MongoDB-wire server (agents answer with captured Lighthouse results).

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
let agent: Agent;
let client: ApiClient;
let checker: Awaited<ReturnType<typeof openApiResponseChecker>>;
const calls: string[] = [];
const SHOP = 'https://shop.example/';

/** Maps a concrete request path to its OpenAPI path template. */
const template = (path: string) =>
  path
    .replace(/^\/v1\/updates\/[^/]+$/, '/v1/updates/{id}')
    .replace(/^\/v1\/sites\/[^/]+\/overview$/, '/v1/sites/{id}/overview')
    .replace(/^\/v1\/sites\/[^/]+\/update$/, '/v1/sites/{id}/update');
/** The client POSTs every request but those of /v1/projects/repository and /v1/projects/flow (GET, PUT, DELETE) and a project's change (PATCH) and removal (DELETE). */
const methodOf = (init: RequestInit | undefined) =>
  (init?.method ?? 'GET').toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    config: {
      PERFWATCH_ALLOW_TARGETS: '127.0.0.0/8',
      PERFWATCH_SECRETS_KEY: randomBytes(32).toString('base64'),
      PERFWATCH_TRUSTED_LOCATIONS: ['london'],
    },
  });
  agentConn = await connect({ servers: nats.url });
  agent = startAgent({
    nc: agentConn,
    location: 'london',
    runner: fixtureRunner({ delayMs: 5 }),
    logger: silentLogger,
    agentId: 'london',
  });
  const { token } = await gateway.admin.createUser('client');
  await gateway.admin.addProject('client', SHOP, { locations: ['london'], runs: 2 });
  checker = await openApiResponseChecker(await (await fetch(`${gateway.url}/v1/openapi.json`)).json());
  const checkingFetch: typeof fetch = async (input, init) => {
    const path = template(new URL(String(input)).pathname);
    const method = methodOf(init);
    if (method === 'post' || method === 'put' || method === 'patch')
      checker.checkRequest(path, method, JSON.parse(String(init!.body)));
    const response = await fetch(input, init);
    checker.check(path, method, response.status, await response.clone().json());
    calls.push(`${path} ${response.status} ${method}`);
    return response;
  };
  client = createApiClient({ server: gateway.url, token, fetch: checkingFetch });
});

afterAll(async () => {
  await agent?.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await nats?.dispose();
});

describe('the typed API client', () => {
  it('calls only operations the OpenAPI document has', async () => {
    const document = (await (await fetch(`${gateway.url}/v1/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    for (const path of Object.values(CLIENT_OPERATIONS))
      expect(document.paths[path]?.['post'] ?? document.paths[path]?.['put'], path).toBeDefined();
    // …and covers every path the document has.
    expect(Object.keys(document.paths).sort()).toEqual(Object.values(CLIENT_OPERATIONS).sort());
  });

  it('runs a sync update, an async one to done, and reads both back, each request and answer as documented', async () => {
    const sync = await client.update({ url: SHOP, device: 'mobile', updateType: 'ci' });
    expect(sync.mobile!.london!.runs).toHaveLength(2);
    const id = await client.startUpdate({ url: SHOP, device: 'desktop' });
    const seen: string[] = [];
    const done = await client.waitForUpdate(id, { pollMs: 50, onStatus: (s) => seen.push(s.status) });
    expect(done).toMatchObject({ id, status: 'done', devices: ['desktop'], updateType: 'manual' });
    expect(seen.at(-1)).toBe('done');

    const list = await client.updates(SHOP);
    expect(list.mobile!.map((e) => e.updateType)).toEqual(['ci']);
    const audit = await client.audit({ url: SHOP, date: done.date!, device: 'desktop', location: ['london'] });
    expect(Object.keys(audit)).toEqual(['desktop']);
    // The sync update's snapshot (mobile) against the async one's (desktop): no cell in common.
    const compared = await client.compare({ url: SHOP, from: sync.mobile!.london!.lighthouse.date, to: done.date! });
    expect(compared.cells).toEqual([]);
    expect(compared.unmatched).toEqual([
      { device: 'mobile', location: 'london', onlyIn: 'from' },
      { device: 'desktop', location: 'london', onlyIn: 'to' },
    ]);
    // The JSON kinds of /v1/artifacts, read off the stored result (the fixture page has no third party).
    const costs = await client.artifact({ url: SHOP, date: done.date!, device: 'desktop', kind: 'third-parties' });
    expect(costs).toMatchObject({ url: SHOP, date: done.date, device: 'desktop', location: 'london' });
    const day = done.date!.slice(0, 10);
    const records = await client.overview({ startDate: day, endDate: day, updateType: 'ci', sections: ['lighthouse'] });
    expect(records.length).toBeGreaterThan(0);
    expect(records.every((r) => r.updateType === 'Ci' && r.section === 'LIGHTHOUSE' && r.device === 'mobile')).toBe(
      true,
    );
    expect(await client.projects()).toEqual([
      { url: SHOP, domain: 'shop.example', locations: ['london'], defaultLocation: 'london', runs: 2, schedule: null },
    ]);
    const made = await client.createProject('https://made.example/', { locations: ['london'], runs: 1 });
    expect(made).toMatchObject({ url: 'https://made.example/', defaultLocation: 'london', runs: 1, schedule: null });
    await expect(client.createProject('https://made.example/')).rejects.toMatchObject({ httpStatus: 409 });
    expect(await client.updateProject(made.url, { schedule: '0 4 * * *', runs: 2 })).toEqual({
      ...made,
      schedule: '0 4 * * *',
      runs: 2,
    });
    await client.removeProject(made.url);
    await expect(client.updateProject(made.url, { runs: 3 })).rejects.toMatchObject({ httpStatus: 404 });
    expect((await client.projects()).map((p) => p.url)).toEqual([SHOP]);

    expect(await client.budgets(SHOP, { budgets: { performance: 50 }, maxRegression: { lcp: 20 } })).toEqual({
      url: SHOP,
      budgets: { performance: 50 },
      maxRegression: { lcp: 20 },
    });
    expect((await client.budgets(SHOP)).budgets).toEqual({ performance: 50 });
    const { created } = await client.webhooks({ targetUrl: 'http://127.0.0.1:9/hook', project: SHOP });
    expect(created!.secret).toMatch(/^pwhs_/);
    expect((await client.webhooks()).webhooks.map((w) => w.id)).toEqual([created!.id]);
    expect((await client.webhooks({ remove: created!.id })).webhooks).toEqual([]);
    const marker = await client.annotate({
      url: SHOP,
      text: 'deploy 42',
      date: done.date!,
      link: 'https://ci.example/42',
    });
    expect(marker).toMatchObject({ url: SHOP, text: 'deploy 42', date: done.date, link: 'https://ci.example/42' });
    expect(await client.annotations(SHOP)).toEqual([marker]);
    expect(await client.credentials(SHOP, { set: { cookies: [{ name: 'session', value: 'sekrit' }] } })).toEqual({
      url: SHOP,
      configured: true,
      cookies: ['session'],
      headers: [],
      loginSteps: 0,
    });
    expect((await client.credentials(SHOP, { clear: true })).configured).toBe(false);
    const link = await client.linkRepository({
      url: SHOP,
      forge: 'github',
      repository: 'acme/shop',
      token: 'ghp_client-token',
      webhookSecret: 'a-client-webhook-secret',
    });
    expect(link).toMatchObject({ url: SHOP, forge: 'github', tokenSet: true, webhookSecretSet: true });
    expect(await client.repository(SHOP)).toEqual(link);
    await client.unlinkRepository(SHOP);
    await expect(client.repository(SHOP)).rejects.toMatchObject({ httpStatus: 404 });
    // Each of those changes is in the audit log, the newest first, a page at a time.
    const newest = await client.auditLog({ limit: 2 });
    expect(newest.entries.map((e) => [e.action, e.target, e.actor.name])).toEqual([
      ['repository.unlinked', SHOP, 'client'],
      ['repository.linked', SHOP, 'client'],
    ]);
    const before = await client.auditLog({ before: newest.next!, action: 'credentials.set' });
    expect(before.entries.map((e) => [e.action, e.details])).toEqual([
      ['credentials.set', { cookies: 1, headers: 0, loginSteps: 0 }],
    ]);
    // A user flow: replaced, read back, refused by the step it is about, removed (once: then 404).
    const cartFlow: Flow = {
      steps: [
        { kind: 'navigate', name: 'product' },
        { kind: 'timespan', name: 'add to cart', actions: [{ action: 'click', text: 'Add to cart' }] },
        { kind: 'snapshot', name: 'cart' },
      ],
    };
    expect(await client.setFlow(SHOP, cartFlow)).toEqual({ url: SHOP, flow: cartFlow });
    expect(await client.flow(SHOP)).toEqual({ url: SHOP, flow: cartFlow });
    const metadata: Flow = { steps: [{ kind: 'navigate', name: 'metadata', url: 'http://169.254.169.254/latest/' }] };
    await expect(client.setFlow(SHOP, metadata)).rejects.toMatchObject({
      httpStatus: 400,
      message: expect.stringMatching(/step 1 "metadata": refused to reach 169\.254\.169\.254/),
    });
    await client.removeFlow(SHOP);
    expect(await client.flow(SHOP)).toEqual({ url: SHOP, flow: null });
    await expect(client.removeFlow(SHOP)).rejects.toMatchObject({ httpStatus: 404 });
    const ciToken = await client.createToken({ scope: 'ci', projects: [SHOP], expires: '30d', label: 'shop CI' });
    expect(ciToken).toMatchObject({ scope: 'ci', projects: [SHOP], user: 'client', label: 'shop CI', revokedAt: null });
    expect(ciToken.token.slice(3, 11)).toBe(ciToken.prefix);
    await client.revokeToken(ciToken.prefix);
    expect((await client.listTokens()).find((t) => t.prefix === ciToken.prefix)?.revokedAt).not.toBeNull();
    await gateway.admin.createUser('teammate');
    expect(await client.setMember('teammate', 'viewer')).toMatchObject({ user: 'teammate', role: 'viewer' });
    expect((await client.listMembers()).map((m) => [m.user, m.role])).toEqual([
      ['client', 'admin'],
      ['teammate', 'viewer'],
    ]);
    await client.removeMember('teammate');
    await expect(client.removeMember('client')).rejects.toMatchObject({ httpStatus: 409 });
    const site = await client.createSite('https://Shop.example:443/', { sampleSize: 2, locations: ['london'] });
    expect(site).toMatchObject({ origin: 'https://shop.example', sitemap: 'discover', sampleSize: 2, maxPages: 100 });
    await expect(client.createSite('https://shop.example')).rejects.toMatchObject({ httpStatus: 409 });
    // Its discovery ran meanwhile (in the background, and shop.example does not resolve).
    expect(await client.updateSite(site.id, { maxPages: 500 })).toEqual({
      ...site,
      maxPages: 500,
      lastDiscovery: expect.any(Object),
    });
    const groupBudgets = { '/product/:id': { budgets: { lcp: 2500 }, maxRegression: {} } };
    expect(await client.updateSite(site.id, { groupBudgets })).toMatchObject({ maxPages: 500, groupBudgets });
    expect((await client.sites()).map((s) => s.origin)).toEqual(['https://shop.example']);
    // shop.example does not resolve: its overview has no pages and no groups, yet answers as documented.
    expect(await client.siteOverview(site.id)).toMatchObject({ site: { id: site.id }, groups: [], worstPages: [] });
    // No pages found: a site update's plan is of none, and one to run is refused (a gate that measured nothing).
    expect(await client.siteUpdate(site.id, { planOnly: true })).toMatchObject({ ok: 1, id: null, plan: { pages: 0 } });
    await expect(client.siteUpdate(site.id)).rejects.toMatchObject({ httpStatus: 400 });
    await client.removeSite(site.id);
    await expect(client.updateSite(site.id, { maxPages: 5 })).rejects.toMatchObject({ httpStatus: 404 });
    expect(new Set(calls.map((c) => c.split(' ')[0]))).toEqual(new Set(Object.values(CLIENT_OPERATIONS)));
    // Where a path has operations beyond its GET and POST forms, the client calls each of them.
    const called = new Set(calls.map((c) => `${c.split(' ')[2]} ${c.split(' ')[0]}`));
    const beyond = checker.documented().filter((key) => /^(put|patch|delete) /.test(key));
    expect(beyond.filter((key) => !called.has(key.split(' ').slice(0, 2).join(' ')))).toEqual([]);
  });

  it('turns error envelopes into ApiClientError with the status and the envelope', async () => {
    const error = await client
      .audit({ url: 'https://not-a-project.example/', date: '2026-01-01T00:00:00' })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiClientError);
    expect(error).toMatchObject({ httpStatus: 404, envelope: { status: 'NOT_FOUND' } });
    const bad = await client.overview({ startDate: '2026-02-30', endDate: '2026-03-01' }).catch((e: unknown) => e);
    expect((bad as ApiClientError).message).toMatch(/^HTTP 400 BAD_REQUEST: .*startDate must be a UTC date yyyy-MM-dd/);
    const unreachable = await createApiClient({ server: 'http://127.0.0.1:9', token: 'x' })
      .updates(SHOP)
      .catch((e: unknown) => e);
    expect((unreachable as Error).message).toMatch(/^cannot reach http:\/\/127.0.0.1:9: /);
  });
});
