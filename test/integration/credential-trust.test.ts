import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type Agent } from '@perfwatch/agent';
import { errorEnvelopeSchema } from '@perfwatch/common';
import { createAdmin, createSecretBox } from '@perfwatch/gateway';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// Credentials go only where the operator said: a gateway trusting london (PERFWATCH_TRUSTED_LOCATIONS)
// keeps credentials for a london project, refuses them for a project also measured in tokyo,
// and refuses with 400 naming tokyo every update of a project that got credentials anyway
// (trust withdrawn since): sync or async, nothing is queued and tokyo's agent is sent nothing.

const KEY = randomBytes(32).toString('base64');
const LONDON = 'https://trusted-shop.example/';
const BOTH = 'https://spread-shop.example/';
let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let token: string;
const conns: NatsConnection[] = [];
const agents: Agent[] = [];
const runners = { london: fixtureRunner({ delayMs: 10 }), tokyo: fixtureRunner({ delayMs: 10 }) };

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    config: { PERFWATCH_SECRETS_KEY: KEY, PERFWATCH_TRUSTED_LOCATIONS: ['london'], MAX_RETESTS: 0 },
  });
  ({ token } = await gateway.admin.createUser('trust'));
  await gateway.admin.addProject('trust', LONDON, { locations: ['london'], runs: 1 });
  await gateway.admin.addProject('trust', BOTH, { locations: ['london', 'tokyo'], runs: 1 });
  for (const location of ['london', 'tokyo'] as const) {
    const nc = await connect({ servers: nats.url });
    conns.push(nc);
    agents.push(
      startAgent({
        nc,
        location,
        runner: runners[location],
        logger: silentLogger,
        agentId: `trust-${location}`,
        capacity: 2,
      }),
    );
  }
});

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  for (const nc of conns) await nc.drain();
  await gateway?.stop();
  await nats?.dispose();
});

async function call(method: 'GET' | 'POST', path: string, params: Record<string, unknown>) {
  const response =
    method === 'GET'
      ? await fetch(`${gateway.url}${path}?${new URLSearchParams(params as Record<string, string>)}`, {
          headers: { Authorization: token },
        })
      : await fetch(`${gateway.url}${path}`, {
          method: 'POST',
          headers: { Authorization: token, 'Content-Type': 'application/json' },
          body: JSON.stringify(params),
        });
  return { status: response.status, body: (await response.json()) as unknown };
}

const COOKIE = { cookies: [{ name: 'session', value: 'sekrit-session' }] };

describe('credentials and the locations trusted with them', () => {
  it('keeps credentials for a project measured only where they are trusted, and runs it there with them', async () => {
    const set = await call('POST', '/v1/credentials', { url: LONDON, auth: COOKIE });
    expect(set).toMatchObject({ status: 200, body: { configured: true, cookies: ['session'] } });
    const update = await call('GET', '/v1/update', { url: LONDON, device: 'desktop' });
    expect(update.status).toBe(200);
    expect(runners.london.requests.at(-1)?.auth).toEqual(COOKIE);
  });

  it('refuses to keep credentials for a project also measured at an untrusted location', async () => {
    const refused = await call('POST', '/v1/credentials', { url: BOTH, auth: COOKIE });
    expect(refused.status).toBe(400);
    const envelope = errorEnvelopeSchema.parse(refused.body);
    expect(JSON.stringify(envelope)).toContain('tokyo');
    expect(JSON.stringify(envelope)).not.toContain('london,');
    expect((await call('GET', '/v1/credentials', { url: BOTH })).body).toMatchObject({ configured: false });
  });

  it('refuses every update of a credentialed project with an untrusted location, naming it, and sends tokyo nothing', async () => {
    // Set by the operator (`perfwatch admin set-auth`), or while tokyo was trusted: refused all the same.
    await createAdmin(gateway.store, { secrets: createSecretBox({ key: KEY }) }).setAuth('trust', BOTH, COOKIE);
    const before = { london: runners.london.requests.length, tokyo: runners.tokyo.requests.length };

    for (const [method, mode] of [
      ['GET', 'sync'],
      ['POST', 'sync'],
      ['GET', 'async'],
      ['POST', 'async'],
    ] as const) {
      const reply = await call(method, '/v1/update', { url: BOTH, mode });
      expect(reply.status, `${method} ${mode}`).toBe(400);
      const envelope = errorEnvelopeSchema.parse(reply.body);
      expect(envelope.message, `${method} ${mode}`).toMatch(/may not go to tokyo/);
      expect(envelope.errors.join(' '), `${method} ${mode}`).toMatch(/untrusted locations: tokyo/);
    }
    const user = (await gateway.store.findUserByName('trust'))!;
    expect(await gateway.store.userBacklog(user.id)).toEqual({ updates: 0, runs: 0 });
    expect(runners.tokyo.requests.length).toBe(before.tokyo);
    expect(runners.london.requests.length).toBe(before.london);
  });
});
