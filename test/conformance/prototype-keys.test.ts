import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import fc from 'fast-check';
import { MongoClient, ObjectId } from 'mongodb';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startAgent, type Agent } from '@perfwatch/agent';
import { errorEnvelopeSchema, PROTOTYPE_NAMES } from '@perfwatch/common';
import { fixtureRunner } from '../support/fixture-runner.ts';
import { isolatedNats, silentLogger, startTestGateway, type TestGateway } from '../support/test-services.ts';

// Every map a caller keys (budgets, allowed regressions, login headers) and every parameter
// name, sent a prototype name (`__proto__`, `constructor`, `toString`, …): each is refused with
// 400 in the error envelope and nothing is stored. A project row that cannot be read, planted
// straight into the store, is skipped by the list reads: its owner's list still answers, and
// the scheduler still runs everyone else's projects.

let nats: Awaited<ReturnType<typeof isolatedNats>>;
let gateway: TestGateway;
let agentConn: NatsConnection;
let agent: Agent;
let token: string;
const SHOP = 'https://proto-shop.example/';
const NAMES = [...PROTOTYPE_NAMES];

beforeAll(async () => {
  nats = await isolatedNats();
  gateway = await startTestGateway({
    natsUrl: nats.url,
    config: { PERFWATCH_SECRETS_KEY: randomBytes(32).toString('base64'), SCHEDULER_INTERVAL_MS: 250 },
  });
  ({ token } = await gateway.admin.createUser('proto'));
  await gateway.admin.addProject('proto', SHOP, { locations: ['london'], runs: 1 });
  agentConn = await connect({ servers: nats.url });
  agent = startAgent({
    nc: agentConn,
    location: 'london',
    runner: fixtureRunner({ delayMs: 10 }),
    logger: silentLogger,
    agentId: 'proto-london',
    capacity: 2,
  });
});

afterAll(async () => {
  await agent?.stop();
  await agentConn?.drain();
  await gateway?.stop();
  await nats?.dispose();
});

type Method = 'GET' | 'POST' | 'PATCH' | 'DELETE';

/** Sends the body as text: `{"__proto__": 1}` must reach the gateway as an own key, as a hostile client sends it. */
async function call(method: Method, path: string, body?: string, as = token) {
  const response = await fetch(`${gateway.url}${path}`, {
    method,
    headers: { Authorization: as, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    ...(body === undefined ? {} : { body }),
  });
  return { status: response.status, body: (await response.json()) as unknown };
}

const q = (name: string) => encodeURIComponent(name);
const url = JSON.stringify(SHOP);

/** Each place a prototype name can go in: a request built around it. */
const POSITIONS: Record<string, (name: string) => [Method, string, string?]> = {
  'POST budgets {NAME: 1}': (n) => ['POST', '/v1/budgets', `{"url":${url},"budgets":{${JSON.stringify(n)}:1}}`],
  'POST maxRegression {NAME: 1}': (n) => [
    'POST',
    '/v1/budgets',
    `{"url":${url},"maxRegression":{"lcp":5,${JSON.stringify(n)}:1}}`,
  ],
  'POST credentials headers {NAME: v}': (n) => [
    'POST',
    '/v1/credentials',
    `{"url":${url},"auth":{"headers":{"X-Ok":"1",${JSON.stringify(n)}:"v"}}}`,
  ],
};
const ENDPOINTS = [
  'update',
  'audit',
  'compare',
  'overview',
  'updates',
  'budgets',
  'webhooks',
  'annotations',
  'credentials',
  'projects',
];
for (const endpoint of ENDPOINTS) {
  POSITIONS[`GET /v1/${endpoint}?NAME=1`] = (n) => ['GET', `/v1/${endpoint}?url=${q(SHOP)}&${q(n)}=1`];
  POSITIONS[`POST /v1/${endpoint} {NAME: 1}`] = (n) => [
    'POST',
    `/v1/${endpoint}`,
    `{"url":${url},${JSON.stringify(n)}:1}`,
  ];
}

// A project's change (PATCH, a body) and removal (DELETE, a query) (issue 33).
POSITIONS['PATCH /v1/projects {NAME: 1}'] = (n) => [
  'PATCH',
  '/v1/projects',
  `{"url":${url},"runs":2,${JSON.stringify(n)}:1}`,
];
POSITIONS['DELETE /v1/projects?NAME=1'] = (n) => ['DELETE', `/v1/projects?url=${q(SHOP)}&${q(n)}=1`];

describe('prototype names in maps and parameter names', () => {
  it('are refused with 400 in every position of every endpoint, and nothing is stored', async () => {
    const seen = new Set<string>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...NAMES),
        fc.constantFrom(...Object.keys(POSITIONS)),
        async (name, position) => {
          seen.add(`${position}|${name}`);
          const [method, path, body] = POSITIONS[position]!(name);
          const reply = await call(method, path, body);
          expect(reply.status, `${position} with ${name}`).toBe(400);
          expect(
            errorEnvelopeSchema.safeParse(reply.body).success,
            `${position} with ${name}: the error envelope`,
          ).toBe(true);
        },
      ),
      { numRuns: 400 },
    );
    // Every name went through the maps (the positions that matter most), not only some.
    for (const name of NAMES)
      for (const position of [
        'POST budgets {NAME: 1}',
        'POST maxRegression {NAME: 1}',
        'POST credentials headers {NAME: v}',
      ]) {
        if (seen.has(`${position}|${name}`)) continue;
        const [method, path, body] = POSITIONS[position]!(name);
        expect((await call(method, path, body)).status, `${position} with ${name}`).toBe(400);
      }

    const budgets = await call('GET', `/v1/budgets?url=${q(SHOP)}`);
    expect(budgets).toEqual({ status: 200, body: { url: SHOP, budgets: {}, maxRegression: {} } });
    const credentials = await call('GET', `/v1/credentials?url=${q(SHOP)}`);
    expect(credentials.body).toMatchObject({ configured: false });
    const projects = await call('GET', '/v1/projects');
    expect(projects.body).toMatchObject({ projects: [{ url: SHOP, runs: 1 }] });
  });

  it('a valid budget still goes through beside them', async () => {
    const set = await call('POST', '/v1/budgets', `{"url":${url},"budgets":{"performance":90}}`);
    expect(set).toMatchObject({ status: 200, body: { budgets: { performance: 90 } } });
    await call('POST', '/v1/budgets', `{"url":${url},"budgets":{}}`);
  });
});

describe('a stored row that cannot be read', () => {
  it('is skipped, logged and counted; its owner still lists, and the scheduler runs the other users’ projects', async () => {
    const { token: poisonedToken } = await gateway.admin.createUser('poisoned');
    const poisoned = await gateway.admin.addProject('poisoned', 'https://poisoned.example/', {
      locations: ['london'],
      runs: 1,
      schedule: '* * * * * *',
    });
    await gateway.admin.addProject('poisoned', 'https://fine.example/', { locations: ['london'], runs: 1 });
    // Straight into the store, as an earlier version's `key in BUDGET_KEYS` let it through.
    const mongo = new MongoClient(inject('mongoUri'));
    try {
      await mongo
        .db(gateway.store.dbName)
        .collection('projects')
        .updateOne(
          { _id: new ObjectId(poisoned.id) },
          { $set: { budgets: { budgets: { constructor: 1 }, maxRegression: {} } } },
        );
    } finally {
      await mongo.close();
    }
    await gateway.admin.createUser('healthy');
    const healthy = await gateway.admin.addProject('healthy', 'https://healthy.example/', {
      locations: ['london'],
      runs: 1,
      schedule: '* * * * * *',
    });

    // A tick every second, a pass every 250 ms, a fixture run of 10 ms: a few passes at most
    // (the bound is the suite's hook-free test timeout's share, far past that on any machine).
    await expect
      .poll(async () => (await gateway.store.listSnapshots(healthy.id)).length, { timeout: 45_000, interval: 100 })
      .toBeGreaterThan(0);
    // The owner's list answers without the row it cannot read.
    const listed = await call('GET', '/v1/projects', undefined, poisonedToken);
    expect(listed.status).toBe(200);
    expect(JSON.stringify(listed.body)).toContain('https://fine.example/');
    expect(JSON.stringify(listed.body)).not.toContain('https://poisoned.example/');

    expect(gateway.store.unreadable.counts().get('project')).toBeGreaterThan(0);
    const metrics = await (await fetch(`${gateway.url}/metrics`)).text();
    expect(metrics).toMatch(/perfwatch_store_records_skipped_total\{kind="project"\} [1-9]/);
  });
});
