import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { auditResultSchema, errorEnvelopeSchema } from '@perfwatch/common';
import { RunFailure, startAgent, type Agent } from '@perfwatch/agent';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// Gateway and agents in this process, over a real nats-server and a real MongoDB-wire server.
// The agents' runner is a double that answers with real captured Lighthouse results: this
// suite is about dispatch, merge and persistence, not measurement.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
const agents: Agent[] = [];
const runners = { london: fixtureRunner({ delayMs: 20 }), tokyo: fixtureRunner({ delayMs: 20 }) };
let token: string;
let otherToken: string;

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({ natsUrl: nats.url, replyTimeoutMs: 5_000 });
  agentConn = await connect({ servers: nats.url });
  for (const location of ['london', 'tokyo'] as const) {
    agents.push(
      startAgent({
        nc: agentConn,
        location,
        runner: runners[location],
        logger: silentLogger,
        agentId: `${location}-1`,
      }),
    );
  }
  ({ token } = await gateway.admin.createUser('alice'));
  ({ token: otherToken } = await gateway.admin.createUser('mallory'));
  await gateway.admin.addProject('alice', 'https://shop.example/', { locations: ['london', 'tokyo'], runs: 3 });
  await gateway.admin.addProject('alice', 'https://nobody-serves.example/', { locations: ['sao_paulo'], runs: 1 });
  await gateway.admin.addProject('alice', 'https://half.example/', { locations: ['london', 'frankfurt'], runs: 1 });
  await gateway.admin.addProject('mallory', 'https://mallory.example/', { locations: ['london'], runs: 1 });
});

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await nats?.dispose();
});

async function call(
  path: string,
  init: { method?: string; token?: string | null; query?: Record<string, string | string[]>; body?: unknown } = {},
) {
  const url = new URL(`/v1/${path}`, gateway.url);
  for (const [k, v] of Object.entries(init.query ?? {}))
    for (const value of [v].flat()) url.searchParams.append(k, value);
  const headers: Record<string, string> = {};
  if (init.token !== null) headers['Authorization'] = init.token ?? token;
  if (init.body !== undefined) headers['Content-Type'] = 'application/json';
  const res = await fetch(url, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? undefined : JSON.stringify(init.body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

describe('sync update over NATS', () => {
  it('runs every run at every location, returns the audit result and stores it for /v1/audit', async () => {
    const before = { london: runners.london.requests.length, tokyo: runners.tokyo.requests.length };
    const res = await call('update', { query: { url: 'https://shop.example/' } });
    expect(res.status).toBe(200);
    const result = auditResultSchema.parse(res.body);
    expect(Object.keys(result).sort()).toEqual(['desktop', 'mobile']);
    for (const device of ['mobile', 'desktop'] as const) {
      expect(Object.keys(result[device]!).sort()).toEqual(['london', 'tokyo']);
      for (const location of ['london', 'tokyo'] as const) {
        const cell = result[device]![location]!;
        expect(cell.runs).toHaveLength(3);
        expect(cell.lighthouse['configSettings']).toMatchObject({ formFactor: device });
        expect(cell.locations.sort()).toEqual(['london', 'tokyo']);
        expect(cell.defaultLocation).toBe('london');
      }
    }
    // 3 runs × 2 devices at each location, each served by that location's agent.
    expect(runners.london.requests.length - before.london).toBe(6);
    expect(runners.tokyo.requests.length - before.tokyo).toBe(6);

    const date = result.mobile!.london!.lighthouse.date;
    const read = await call('audit', { query: { url: 'https://shop.example/', date } });
    expect(read.status).toBe(200);
    expect(read.body).toEqual(res.body);

    const post = await call('audit', {
      method: 'POST',
      body: { url: 'https://shop.example/', date: `${date}Z`, device: 'desktop', location: ['tokyo'] },
    });
    expect(post.status).toBe(200);
    expect(Object.keys(post.body)).toEqual(['desktop']);
    expect(Object.keys(post.body.desktop)).toEqual(['tokyo']);
    expect(post.body.desktop.tokyo).toEqual(res.body.desktop.tokyo);
  });

  it('accepts POST, a device filter and a Bearer token', async () => {
    const res = await call('update', {
      method: 'POST',
      token: `Bearer ${token}`,
      body: { url: 'https://shop.example/', device: 'mobile' },
    });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body)).toEqual(['mobile']);
  });

  it("answers 503 at once when no agent serves the project's locations", async () => {
    const started = Date.now();
    const res = await call('update', { query: { url: 'https://nobody-serves.example/', device: 'mobile' } });
    expect(res.status).toBe(503);
    expect(errorEnvelopeSchema.parse(res.body).status).toBe('SERVICE_UNAVAILABLE');
    expect(Date.now() - started).toBeLessThan(3_000);
  });

  it('returns the locations that answered when others have no agent', async () => {
    const res = await call('update', { query: { url: 'https://half.example/', device: 'desktop' } });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body.desktop)).toEqual(['london']);
    expect(res.body.desktop.london.locations).toEqual(['london']);
  });

  it("reports a page that fails to load everywhere as 502 with the agent's reason", async () => {
    const nc = await connect({ servers: nats.url });
    const failing = fixtureRunner({
      fail: () => new RunFailure('PAGE_LOAD_FAILED', 'NO_FCP: the page did not paint', false),
    });
    const agent = startAgent({ nc, location: 'los_angeles', runner: failing, logger: silentLogger, agentId: 'la-1' });
    try {
      await gateway.admin.addProject('alice', 'https://broken.example/', { locations: ['los_angeles'], runs: 2 });
      const res = await call('update', { query: { url: 'https://broken.example/', device: 'mobile' } });
      expect(res.status).toBe(502);
      expect(res.body.status).toBe('BAD_GATEWAY');
      expect(res.body.errors.join(' ')).toMatch(/NO_FCP/);
    } finally {
      await agent.stop();
      await nc.drain();
    }
  });

  it('answers 504 when the only agent never replies in time', async () => {
    const nc = await connect({ servers: nats.url });
    // Subscribed on the subject but silent: the gateway's wait must end, as a timeout.
    const sub = nc.subscribe('perfwatch.audit.v1.frankfurt', { queue: 'perfwatch-agents.frankfurt' });
    const quick = await startTestGateway({ natsUrl: nats.url, replyTimeoutMs: 500 });
    try {
      const { token: t } = await quick.admin.createUser('zed');
      await quick.admin.addProject('zed', 'https://slow.example/', { locations: ['frankfurt'], runs: 1 });
      const res = await fetch(
        `${quick.url}/v1/update?url=${encodeURIComponent('https://slow.example/')}&device=mobile`,
        { headers: { Authorization: t } },
      );
      expect(res.status).toBe(504);
      expect(errorEnvelopeSchema.parse(await res.json()).status).toBe('GATEWAY_TIMEOUT');
    } finally {
      sub.unsubscribe();
      await nc.drain();
      await quick.stop();
    }
  });
});

describe('authentication and tenancy', () => {
  it('400 without the Authorization header, naming it', async () => {
    const res = await call('update', { token: null, query: { url: 'https://shop.example/' } });
    expect(res.status).toBe(400);
    expect(errorEnvelopeSchema.parse(res.body).status).toBe('BAD_REQUEST');
    expect(`${res.body.message} ${res.body.errors}`).toMatch(/Authorization/);
  });

  it.each(['pw_' + 'A'.repeat(43), 'nonsense', '', 'Bearer '])('401 for the token %j', async (bad) => {
    const res = await call('audit', {
      token: bad,
      query: { url: 'https://shop.example/', date: '2026-01-01T00:00:00' },
    });
    expect(res.status).toBe(401);
    expect(res.body.status).toBe('UNAUTHORIZED');
  });

  it('401 once a token is revoked', async () => {
    const { token: t, prefix } = await gateway.admin.createToken('alice');
    expect(
      (await call('audit', { token: t, query: { url: 'https://x.example/', date: '2026-01-01T00:00:00' } })).status,
    ).toBe(404);
    await gateway.admin.revokeToken(prefix);
    expect(
      (await call('audit', { token: t, query: { url: 'https://x.example/', date: '2026-01-01T00:00:00' } })).status,
    ).toBe(401);
  });

  it('401 saying the token expired once its expiry has come, without echoing the token', async () => {
    const query = { url: 'https://x.example/', date: '2026-01-01T00:00:00' };
    const later = await gateway.admin.createToken('alice', { expiresAt: new Date(Date.now() + 86_400_000) });
    expect((await call('audit', { token: later.token, query })).status).toBe(404);
    const expiresAt = new Date(Date.now() - 1_000);
    const { token: expired } = await gateway.admin.createToken('alice', { expiresAt });
    const res = await call('audit', { token: expired, query });
    expect(res.status).toBe(401);
    const envelope = errorEnvelopeSchema.parse(res.body);
    expect(envelope.status).toBe('UNAUTHORIZED');
    expect(envelope.message).toBe('The API token has expired.');
    expect(envelope.errors.join(' ')).toContain(`expired at ${expiresAt.toISOString()}`);
    expect(JSON.stringify(res.body)).not.toContain(expired.slice(3, 20));
    // The same prefix with a wrong secret is not told anything about the token it names.
    const guessed = `${expired.slice(0, 11)}${expired.slice(11).replace(/./g, 'A')}`;
    expect(errorEnvelopeSchema.parse((await call('audit', { token: guessed, query })).body).message).toBe(
      'The API token is not valid.',
    );
  });

  it("404 for another user's project, exactly as for one that does not exist", async () => {
    const theirs = await call('update', { token: otherToken, query: { url: 'https://shop.example/' } });
    const nobodys = await call('update', { token: otherToken, query: { url: 'https://no-such-project.example/' } });
    expect(theirs.status).toBe(404);
    expect(nobodys.status).toBe(404);
    expect(theirs.body.status).toBe('NOT_FOUND');
    expect(theirs.body.message).toBe(nobodys.body.message);
  });

  it('405 for other methods, naming the method and listing GET and POST', async () => {
    for (const method of ['PUT', 'DELETE', 'PATCH', 'HEAD']) {
      const res = await fetch(`${gateway.url}/v1/update?url=x`, { method, headers: { Authorization: token } });
      expect(res.status, method).toBe(405);
      expect(res.headers.get('allow')).toBe('GET, POST');
      if (method !== 'HEAD') {
        const body = errorEnvelopeSchema.parse(await res.json());
        expect(body.status).toBe('METHOD_NOT_ALLOWED');
        expect(body.message).toContain(method);
        expect(body.errors.join(' ')).toMatch(/GET.*POST/);
      }
    }
  });

  it('400 naming each bad parameter', async () => {
    const res = await call('audit', {
      query: { url: 'not a url', date: '2026-02-30T00:00:00', device: 'tablet', location: ['london', 'mars'] },
    });
    expect(res.status).toBe(400);
    const text = res.body.errors.join('\n');
    for (const name of ['url', 'date', 'device', 'location']) expect(text).toContain(name);
  });

  it('404 when the project has no snapshot at that second', async () => {
    const res = await call('audit', { query: { url: 'https://shop.example/', date: '2001-01-01T00:00:00' } });
    expect(res.status).toBe(404);
    expect(res.body.status).toBe('NOT_FOUND');
  });

  it('answers unknown routes and malformed JSON in the envelope', async () => {
    const unknown = await call('nope');
    expect(unknown.status).toBe(404);
    expect(errorEnvelopeSchema.parse(unknown.body).status).toBe('NOT_FOUND');
    const res = await fetch(`${gateway.url}/v1/update`, {
      method: 'POST',
      headers: { Authorization: token, 'Content-Type': 'application/json' },
      body: '{"url": ',
    });
    expect(res.status).toBe(400);
    expect(errorEnvelopeSchema.parse(await res.json()).status).toBe('BAD_REQUEST');
  });

  it('answers async updates with 429 and Retry-After once a location has too many pending, and shows them as a metric', async () => {
    const crowded = await startTestGateway({
      natsUrl: nats.url,
      config: { MAX_PENDING_UPDATES_PER_LOCATION: 2, UPDATE_RETRY_DELAY_MS: 60_000 },
    });
    try {
      const { token: t } = await crowded.admin.createUser('crowd');
      const { token: late } = await crowded.admin.createUser('latecomer');
      // Nobody serves sao_paulo: its updates wait in the queue to be tried again.
      await crowded.admin.addProject('crowd', 'https://crowd.example/', { locations: ['sao_paulo'], runs: 1 });
      await crowded.admin.addProject('latecomer', 'https://late.example/', { locations: ['sao_paulo'], runs: 1 });
      const ask = (url: string, token: string) =>
        fetch(`${crowded.url}/v1/update?url=${url}&mode=async&device=mobile`, { headers: { Authorization: token } });
      expect((await ask('https://crowd.example/', t)).status).toBe(200);
      expect((await ask('https://crowd.example/', t)).status).toBe(200);
      // Another user meets the full location, and is not told how full, or by whom.
      const refused = await ask('https://late.example/', late);
      expect(refused.status).toBe(429);
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      const body = errorEnvelopeSchema.parse(await refused.json());
      expect(body).toEqual({
        status: 'TOO_MANY_REQUESTS',
        message: 'The service has as many updates waiting for sao_paulo as it takes. Try again later.',
        errors: [],
      });
      const metrics = await (await fetch(`${crowded.url}/metrics`)).text();
      expect(metrics).toMatch(/^perfwatch_updates_pending\{location="sao_paulo"\} 2$/m);
    } finally {
      await crowded.stop();
    }
  });

  it("limits each user, whichever token: runs queued, and sync updates in flight across gateway replicas; 429s speak of the caller's own load only", async () => {
    const config = { MAX_QUEUED_RUNS_PER_USER: 4, MAX_SYNC_UPDATES_PER_USER: 1, UPDATE_RETRY_DELAY_MS: 60_000 };
    const one = await startTestGateway({ natsUrl: nats.url, config });
    const two = await startTestGateway({ natsUrl: nats.url, config, store: one.store });
    try {
      const { token: first } = await one.admin.createUser('heavy');
      const { token: second } = await one.admin.createToken('heavy');
      const { token: light } = await one.admin.createUser('light');
      await one.admin.addProject('heavy', 'https://heavy.example/', { locations: ['sao_paulo'], runs: 3 });
      await one.admin.addProject('light', 'https://light.example/', { locations: ['sao_paulo'], runs: 1 });
      const asyncUpdate = (base: string, url: string, token: string) =>
        fetch(`${base}/v1/update?url=${url}&mode=async&device=mobile`, { headers: { Authorization: token } });
      // 3 runs queued of 4; a second update would make 6, whichever token or gateway asks.
      expect((await asyncUpdate(one.url, 'https://heavy.example/', first)).status).toBe(200);
      const over = await asyncUpdate(two.url, 'https://heavy.example/', second);
      expect(over.status).toBe(429);
      expect(errorEnvelopeSchema.parse(await over.json())).toEqual({
        status: 'TOO_MANY_REQUESTS',
        message: 'You have too many updates waiting. Try again when some have finished.',
        errors: ['your 1 unfinished updates hold 3 runs; this one adds 3; the limit is 4 runs per user'],
      });
      // Another user's room is its own.
      expect((await asyncUpdate(two.url, 'https://light.example/', light)).status).toBe(200);

      // Sync: one in flight per user. An agent in los_angeles takes 1.5 s a run; while one sync
      // update of the user runs on one gateway, a second one on the other gateway is refused.
      const slowRunner = fixtureRunner({ delayMs: 1_500 });
      const slowAgent = startAgent({
        nc: agentConn,
        location: 'los_angeles',
        runner: slowRunner,
        logger: silentLogger,
        agentId: 'los_angeles-1',
      });
      try {
        await one.admin.addProject('heavy', 'https://heavy-sync.example/', { locations: ['los_angeles'], runs: 1 });
        const syncUpdate = (base: string, token: string) =>
          fetch(`${base}/v1/update?url=https://heavy-sync.example/&device=mobile`, {
            headers: { Authorization: token },
          });
        const running = syncUpdate(one.url, first);
        await vi.waitFor(() => expect(slowRunner.requests.length).toBe(1), { timeout: 5_000, interval: 20 });
        const busy = await syncUpdate(two.url, second);
        expect(busy.status).toBe(429);
        expect(errorEnvelopeSchema.parse(await busy.json()).errors).toEqual([
          'limit: 1 sync updates in flight per user',
        ]);
        expect((await (await running).json()) as object).toHaveProperty('mobile');
        // Once it is done, the next one goes.
        expect((await syncUpdate(two.url, second)).status).toBe(200);
      } finally {
        await slowAgent.stop();
      }
    } finally {
      await two.stop();
      await one.stop();
    }
  });
});
